/**
 * `armada infra` prints the database URLs with their password as `***` and names the file that holds it; only
 * `--show-secrets` prints them whole (docs/operations.md, "armada infra"). Before, the embedded server's password was in
 * the ready line, so in every terminal, CI log and scrollback that showed it.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { Client } from 'pg';
import { ARMADA_BIN } from '../support/armadaProcess';
import { killProcessesUsing } from '../support/processes';
const { freePort } = require('../support/ports') as { freePort(): Promise<number> };

jest.setTimeout(240_000);

let home: string;
// an external TEMPORAL_ADDRESS: no dev server is started (armada infra does not connect to it without --bundle)
const env = () => ({ ...process.env, ARMADA_HOME: home, ARMADA_LOG_LEVEL: 'info', DATABASE_URL: '', TEMPORAL_ADDRESS: '127.0.0.1:1' });

beforeEach(() => {
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-infrasecrets-'));
});
afterEach(() => {
  killProcessesUsing(home);
  fs.rmSync(home, { recursive: true, force: true });
});

/**
 * Runs `armada infra` until its ready line, runs `whileReady` with it, then stops it; everything it wrote to stdout and
 * stderr, and the line.
 */
async function infraOutput(extra: string[], whileReady: (ready: Record<string, unknown>) => Promise<void> = async () => undefined): Promise<{ output: string; ready: Record<string, unknown> }> {
  const child = spawn(process.execPath, [ARMADA_BIN, 'infra', '--home', home, '--pg-port', String(await freePort()), ...extra], { env: env(), stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stderr.on('data', (d) => (output += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  try {
    const ready = await new Promise<Record<string, unknown>>((resolve, reject) => {
      void exited.then((code) => reject(new Error(`armada infra exited ${code}: ${output}`)));
      readline.createInterface({ input: child.stdout }).on('line', (line) => {
        output += `${line}\n`;
        const msg = JSON.parse(line) as Record<string, unknown>;
        if (msg.event === 'ready') resolve(msg);
      });
    });
    await whileReady(ready);
    return { output, ready };
  } finally {
    child.kill('SIGTERM');
    await exited;
  }
}

test('the ready line shows the passwords as *** and names the password file; --show-secrets prints the URLs whole', async () => {
  const masked = await infraOutput([]);
  const passwordFile = path.join(home, 'pg-password');
  expect(masked.ready.passwordFile).toBe(passwordFile);
  expect(fs.statSync(passwordFile).mode & 0o777).toBe(0o600);
  const password = fs.readFileSync(passwordFile, 'utf8').trim();
  expect(password.length).toBeGreaterThanOrEqual(20);
  expect(masked.ready.databaseUrl).toMatch(/^postgres:\/\/armada:\*\*\*@127\.0\.0\.1:\d+\/armada$/);
  expect(masked.ready.adminUrl).toMatch(/^postgres:\/\/armada:\*\*\*@127\.0\.0\.1:\d+\/postgres$/);
  // nowhere in what it wrote: not in the line, not in a log line on stderr
  expect(masked.output).toContain('"event":"ready"');
  expect(masked.output).not.toContain(password);

  // whole, and the URL a program connects with
  const whole = await infraOutput(['--show-secrets'], async (ready) => {
    const c = new Client({ connectionString: ready.databaseUrl as string });
    await c.connect();
    try {
      expect((await c.query('SELECT current_user AS u')).rows[0].u).toBe('armada');
    } finally {
      await c.end();
    }
  });
  expect(whole.ready.databaseUrl).toMatch(new RegExp(`^postgres://armada:${password}@127\\.0\\.0\\.1:\\d+/armada$`));
  expect(whole.ready.passwordFile).toBe(passwordFile);
});

/** The environment a live process was started with (`[]` when it cannot be read: gone, or another user's). */
function environOf(pid: number): string[] {
  try {
    return fs.readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0').filter(Boolean);
  } catch {
    return [];
  }
}

/** Live processes whose command line holds `text`. */
function processesWith(text: string): number[] {
  return fs
    .readdirSync('/proc')
    .filter((e) => /^\d+$/.test(e))
    .filter((e) => {
      try {
        return fs.readFileSync(`/proc/${e}/cmdline`, 'utf8').includes(text);
      } catch {
        return false;
      }
    })
    .map(Number);
}

test("the embedded PostgreSQL and Temporal dev server get none of the server's secrets in their environment (a SQL superuser reads it with COPY FROM PROGRAM)", async () => {
  const tag = Math.random().toString(36).slice(2);
  const secrets = { ARMADA_ENCRYPTION_KEY: `sekret-enc-${tag}`, ARMADA_TASK_API_KEY: `sekret-task-${tag}`, ARMADA_API_KEY: `sekret-api-${tag}`, GITHUB_TOKEN: `sekret-gh-${tag}`, ANTHROPIC_API_KEY: `sekret-llm-${tag}` };
  const child = spawn(process.execPath, [ARMADA_BIN, 'infra', '--home', home, '--pg-port', String(await freePort()), '--temporal-port', String(await freePort()), '--show-secrets'], {
    env: { ...env(), ...secrets, TEMPORAL_ADDRESS: '' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  try {
    const ready = await new Promise<Record<string, unknown>>((resolve, reject) => {
      void exited.then((code) => reject(new Error(`armada infra exited ${code}: ${stderr}`)));
      readline.createInterface({ input: child.stdout }).on('line', (line) => {
        const msg = JSON.parse(line) as Record<string, unknown>;
        if (msg.event === 'ready') resolve(msg);
      });
    });
    const c = new Client({ connectionString: ready.databaseUrl as string });
    await c.connect();
    let backendEnviron: string;
    try {
      // what a program the server runs sees (PostgreSQL writes its process title over /proc/self/environ)
      await c.query('CREATE TEMP TABLE env_lines (line text)');
      await c.query("COPY env_lines FROM PROGRAM 'env' WITH (FORMAT text, DELIMITER E'\\x01')");
      backendEnviron = (await c.query<{ e: string }>("SELECT string_agg(line, E'\\n') AS e FROM env_lines")).rows[0]?.e ?? '';
    } finally {
      await c.end();
    }
    expect(backendEnviron).toContain('PATH=');
    const postmaster = Number(fs.readFileSync(path.join(home, 'pg', 'postmaster.pid'), 'utf8').split('\n')[0]);
    const devServers = processesWith(path.join(home, 'temporal.db'));
    expect(devServers.length).toBeGreaterThan(0);
    const seen = [backendEnviron, ...[postmaster, ...devServers].map((p) => environOf(p).join('\n'))].join('\n');
    for (const value of Object.values(secrets)) expect(seen).not.toContain(value);
    for (const name of Object.keys(secrets)) expect(seen).not.toMatch(new RegExp(`(^|\\s|\\0)${name}=`));
  } finally {
    child.kill('SIGTERM');
    await exited;
  }
});
