/**
 * What `armada migrate` prints: for a person at a terminal, text; for a pipe (a deploy Job, CI, a log collector) or
 * with --json, JSON lines in the log stream's shape, the last one `{"event":"migrated","applied":[…]}`.
 * ARMADA_LOG_FORMAT=pretty asks for text on a pipe. The terminal is util-linux's `script`, as in test/support/armadaProcess.ts.
 */
import { execFile, spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Client } from 'pg';
import { listMigrations } from '../../lib/db/migrate';
import { ARMADA_BIN } from '../support/armadaProcess';
import { env as testEnv } from '../support/harness';

jest.setTimeout(120_000);

let home: string;
let dbName: string;
let env: NodeJS.ProcessEnv;

beforeAll(async () => {
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-migrate-out-'));
  dbName = `m_${crypto.randomBytes(6).toString('hex')}`;
  const admin = new Client({ connectionString: testEnv('ARMADA_TEST_ADMIN_URL') });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${dbName}`); // empty: the first run applies every migration
  await admin.end();
  env = { ...process.env, ARMADA_HOME: home, ARMADA_CONFIG: '', DATABASE_URL: testEnv('ARMADA_TEST_DATABASE_URL').replace(/\/armada$/, `/${dbName}`), TEMPORAL_ADDRESS: '' };
  delete env.ARMADA_LOG_FORMAT;
});
afterAll(async () => {
  const admin = new Client({ connectionString: testEnv('ARMADA_TEST_ADMIN_URL') });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
  await admin.end();
  fs.rmSync(home, { recursive: true, force: true });
});

/** bin/armada migrate with stdout and stderr pipes. */
function migrate(args: string[] = [], extraEnv: NodeJS.ProcessEnv = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  return run('migrate', extraEnv, args);
}

/** bin/armada `command` with stdout and stderr pipes. */
function run(command: string, extraEnv: NodeJS.ProcessEnv = {}, args: string[] = []): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [ARMADA_BIN, command, ...args], { env: { ...env, ...extraEnv }, timeout: 90_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? Number((err as { code?: unknown }).code ?? 1) : 0, stdout, stderr });
    });
  });
}

/** Every stdout line parsed as JSON (a line that is not JSON fails the test, naming it). */
function jsonLines(stdout: string): Record<string, unknown>[] {
  return stdout
    .trim()
    .split('\n')
    .map((line) => {
      try {
        return JSON.parse(line) as Record<string, unknown>;
      } catch {
        throw new Error(`not a JSON line: ${line}`);
      }
    });
}

test('piped, every line is JSON, the last one naming the migrations applied; then that the database is up to date', async () => {
  const first = await migrate();
  expect([first.code, first.stderr]).toEqual([0, '']);
  expect(jsonLines(first.stdout).at(-1)).toMatchObject({ level: 30, event: 'migrated', applied: listMigrations().map((m) => m.name), msg: expect.stringMatching(/^applied \d+ migrations/) });

  const again = await migrate();
  expect([again.code, again.stderr]).toEqual([0, '']);
  expect(jsonLines(again.stdout)).toEqual([{ level: 30, time: expect.any(Number), event: 'migrated', applied: [], msg: 'database is up to date' }]);
});

test('--json is JSON even where text was asked for; ARMADA_LOG_FORMAT=pretty is text on a pipe', async () => {
  const json = await migrate(['--json'], { ARMADA_LOG_FORMAT: 'pretty' });
  expect([json.code, json.stderr]).toEqual([0, '']);
  expect(jsonLines(json.stdout).at(-1)).toMatchObject({ event: 'migrated', applied: [], msg: 'database is up to date' });

  const text = await migrate([], { ARMADA_LOG_FORMAT: 'pretty' });
  expect([text.code, text.stdout, text.stderr]).toEqual([0, 'database is up to date\n', '']);
});

test('on a terminal it is text', async () => {
  const child = spawn('script', ['-qfec', `exec ${JSON.stringify(process.execPath)} ${JSON.stringify(ARMADA_BIN)} migrate`, '/dev/null'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (d) => (out += d.toString()));
  child.stderr.on('data', (d) => (out += d.toString()));
  const code = await new Promise((resolve) => child.once('exit', resolve));
  expect([code, out.replace(/\r\n/g, '\n')]).toEqual([0, 'database is up to date\n']);
});

test('a DATABASE_URL of no PostgreSQL URL form, or whose server is not there, is one line naming the setting (its host:port) and what to do, without the password; armada start says the same', async () => {
  const DO = 'fix DATABASE_URL, or unset it to use the embedded PostgreSQL';
  for (const url of ['not a url', 'postgres://armada:sekret-pw@[bad', 'mysql://armada:sekret-pw@127.0.0.1/armada']) {
    const r = await migrate([], { DATABASE_URL: url });
    // node-postgres said "Invalid URL", or took `not a url` for a host name ("getaddrinfo ENOTFOUND base")
    expect([url, r.code, r.stdout, r.stderr]).toEqual([url, 1, '', expect.stringMatching(/^armada: DATABASE_URL is not a PostgreSQL URL of the form postgres:\/\/user:password@host:5432\/database .*unset it to use the embedded PostgreSQL\n$/)]);
    expect(r.stderr).not.toContain('sekret-pw');
  }
  const port = await new Promise<number>((resolve) => {
    const probe = net.createServer().listen(0, '127.0.0.1', () => {
      const p = (probe.address() as net.AddressInfo).port;
      probe.close(() => resolve(p)); // nothing listens there once closed
    });
  });
  const unreachable = `armada: the PostgreSQL of DATABASE_URL at 127.0.0.1:${port} cannot be reached (connect ECONNREFUSED 127.0.0.1:${port}): start it, or ${DO}\n`;
  const r = await migrate([], { DATABASE_URL: `postgres://armada:sekret-pw@127.0.0.1:${port}/armada` });
  expect([r.code, r.stdout, r.stderr]).toEqual([1, '', unreachable]);

  // `armada start` migrates first and says the same (before session 52: the driver's bare `connect ECONNREFUSED …`);
  // its log lines go to stdout, its one line to stderr; TEMPORAL_ADDRESS is never dialled, the migrations fail first
  const start = await run('start', { DATABASE_URL: `postgres://armada:sekret-pw@127.0.0.1:${port}/armada`, TEMPORAL_ADDRESS: `127.0.0.1:${port}` });
  expect([start.code, start.stderr]).toEqual([1, unreachable]);
  // that line alone says it: no warning before it that postgres (or Temporal) is unavailable, from the dependency
  // probes that were started before the migrations until session 53
  expect(start.stdout).not.toMatch(/unavailable/);
  expect(start.stdout + start.stderr).not.toContain('sekret-pw');
  expect(start.stdout + start.stderr).not.toMatch(/\n\s+at /); // no stack
});
