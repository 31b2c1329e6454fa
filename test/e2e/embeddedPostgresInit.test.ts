/**
 * The first start's initdb cut short (armada and initdb killed together: power loss, a cgroup kill) must not block
 * every later start. initdb writes PG_VERSION early, which used to be taken to mean the data directory was ready: the
 * next start failed with `read ECONNRESET`, then `Connection terminated unexpectedly`, for ever. A data directory
 * that is incomplete for some other reason is never emptied: the start refuses in one line naming it.
 */
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from 'pg';
import { ARMADA_BIN, spawnArmada } from '../support/armadaProcess';
import { eventually } from '../support/harness';
import { initMarkPath } from '../../lib/runtime/pgDataDir';
import { killProcessesUsing, pidsUsing, processesUsing } from '../support/processes';
const { freePort } = require('../support/ports') as { freePort(): Promise<number> };

jest.setTimeout(240_000);

let home: string;
const env = () => ({ ...process.env, ARMADA_HOME: home, ARMADA_LOG_LEVEL: 'warn', DATABASE_URL: '', TEMPORAL_ADDRESS: '' });
const infraArgs = async () => ['infra', '--home', home, '--pg-port', String(await freePort()), '--temporal-port', String(await freePort()), '--show-secrets'];

function killAllUsingHome(): void {
  killProcessesUsing(home);
}

beforeEach(() => {
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-pginit-'));
});
afterEach(() => {
  killAllUsingHome();
  fs.rmSync(home, { recursive: true, force: true });
});

test('a start whose initdb was killed along with armada is redone by the next start, which comes up', async () => {
  const pgDir = path.join(home, 'pg');
  const first = spawn(process.execPath, [ARMADA_BIN, ...(await infraArgs())], { env: env(), stdio: 'ignore' });
  const firstExited = new Promise((resolve) => first.once('exit', resolve));
  // initdb has begun (PG_VERSION is among its first files) and is still at work
  await eventually(async () => fs.existsSync(path.join(pgDir, 'PG_VERSION')) && processesUsing(home).some((p) => p.includes('initdb')), 120_000, 10);
  // frozen at once (armada, initdb and its bootstrap backend), then killed: initdb cannot finish between the two
  for (const pid of [first.pid as number, ...pidsUsing(home)]) {
    try {
      process.kill(pid, 'SIGSTOP');
    } catch {
      /* gone */
    }
  }
  process.kill(first.pid as number, 'SIGKILL');
  killAllUsingHome(); // initdb with it
  await firstExited;
  await eventually(async () => !processesUsing(home).some((p) => p.includes('initdb')), 30_000);
  // it was cut short: armada had not seen initdb succeed (the mark it removes then is still there), and the directory
  // holds PG_VERSION, which the start used to take for a ready cluster. (Whether initdb got as far as pg_control
  // before the freeze is a matter of microseconds, so it is not asserted: the next start must redo either.)
  expect(fs.existsSync(initMarkPath(pgDir))).toBe(true);
  expect(fs.existsSync(path.join(pgDir, 'PG_VERSION'))).toBe(true);

  const second = await spawnArmada(await infraArgs(), 'ready', env(), 180_000);
  try {
    const c = new Client({ connectionString: second.ready.databaseUrl as string });
    await c.connect();
    try {
      expect((await c.query('SELECT count(*)::int AS n FROM schema_migrations')).rows[0].n).toBeGreaterThan(0);
    } finally {
      await c.end();
    }
  } finally {
    const exited = new Promise((resolve) => second.child.once('exit', resolve));
    second.child.kill('SIGTERM');
    await exited;
  }
});

test('an incomplete data directory armada did not leave half-made is left as it is, and the start says what to do in one line', async () => {
  const pgDir = path.join(home, 'pg');
  fs.mkdirSync(path.join(pgDir, 'base'), { recursive: true, mode: 0o700 });
  fs.writeFileSync(path.join(pgDir, 'PG_VERSION'), '17\n');
  fs.writeFileSync(path.join(pgDir, 'base', 'keep-me'), 'data');
  const r = spawnSync(process.execPath, [ARMADA_BIN, ...(await infraArgs())], { env: env(), encoding: 'utf8', timeout: 120_000 });
  expect(r.status).toBe(1);
  const lines = r.stderr.trim().split('\n');
  expect(lines).toHaveLength(1);
  expect(lines[0]).toContain(pgDir);
  expect(lines[0]).toMatch(/not a complete PostgreSQL data directory.*(remove|move)/);
  expect(fs.readFileSync(path.join(pgDir, 'base', 'keep-me'), 'utf8')).toBe('data');
});
