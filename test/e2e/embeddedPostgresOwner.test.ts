/**
 * The embedded PostgreSQL of an ARMADA_HOME: one left running by a killed armada is stopped and replaced by the next
 * start, but one whose armada is alive is never touched (a second start or `armada migrate` on the same home).
 * The file has one home and one running `armada infra` on it (its PostgreSQL's initdb and its Temporal dev server's
 * start are most of a test's time): the first two tests leave it running, the last kills it.
 */
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from 'pg';
import { ARMADA_BIN, spawnArmada, type ArmadaProcess } from '../support/armadaProcess';
import { eventually } from '../support/harness';
import { killProcessesUsing, pidsUsing } from '../support/processes';
const { freePort } = require('../support/ports') as { freePort(): Promise<number> };

let home: string;
const env = (pgPort: number) => ({ ...process.env, ARMADA_HOME: home, ARMADA_PG_PORT: String(pgPort), ARMADA_LOG_LEVEL: 'warn', DATABASE_URL: '', TEMPORAL_ADDRESS: '' });

async function answers(url: string): Promise<boolean> {
  const c = new Client({ connectionString: url });
  try {
    await c.connect();
    await c.query('SELECT 1');
    return true;
  } catch {
    return false;
  } finally {
    await c.end().catch(() => undefined);
  }
}

let infra: ArmadaProcess | undefined;
let pgPort: number;

/** The file's `armada infra` on its home, started by the first test that needs it. */
async function runningInfra(): Promise<ArmadaProcess> {
  if (infra && infra.child.exitCode === null && infra.child.signalCode === null) return infra;
  pgPort = await freePort();
  infra = await spawnArmada(['infra', '--home', home, '--pg-port', String(pgPort), '--temporal-port', String(await freePort()), '--show-secrets'], 'ready', env(pgPort));
  return infra;
}

beforeAll(() => {
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-pgowner-'));
});
afterAll(async () => {
  const child = infra?.child;
  if (child && child.exitCode === null && child.signalCode === null) {
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    await exited;
  }
  killProcessesUsing(home);
  fs.rmSync(home, { recursive: true, force: true });
});

test('armada migrate on the home of a running armada refuses in one line and leaves its database running', async () => {
  const url = (await runningInfra()).ready.databaseUrl as string;
  expect(await answers(url)).toBe(true);
  const r = spawnSync(process.execPath, [ARMADA_BIN, 'migrate'], { env: env(await freePort()), encoding: 'utf8', timeout: 60_000 });
  expect(r.status).toBe(1);
  expect(r.stderr.trim()).toMatch(/^armada: the embedded PostgreSQL of .* is in use by a running armada \(pid \d+: .*armada.*\); stop it first, or set DATABASE_URL and TEMPORAL_ADDRESS/);
  expect(r.stderr.trim().split('\n')).toHaveLength(1);
  expect(await answers(url)).toBe(true);
}, 120_000);

test('a second armada start on the home of a running one refuses and leaves nothing of its own running', async () => {
  const running = await runningInfra();
  const before = pidsUsing(home).sort();
  const second = spawnSync(process.execPath, [ARMADA_BIN, 'start'], {
    env: {
      ...env(await freePort()),
      ARMADA_TEMPORAL_PORT: String(await freePort()),
      ARMADA_TEMPORAL_UI_PORT: '',
      ARMADA_TEMPORAL_METRICS_PORT: '',
      ARMADA_TASK_PORT: String(await freePort()),
      ARMADA_SCHEDULER_PORT: String(await freePort()),
      ARMADA_SCHEDULER_ALT_PORT: '',
      ARMADA_AGENTS_PORT: String(await freePort()),
      ARMADA_TRACES_PORT: String(await freePort()),
    },
    encoding: 'utf8',
    timeout: 90_000,
  });
  expect(second.status).toBe(1);
  expect(second.stderr).toMatch(/is in use by a running armada/);
  // the temporal dev server it began to start is stopped again
  await eventually(async () => JSON.stringify(pidsUsing(home).sort()) === JSON.stringify(before), 20_000, 200);
  expect(await answers(running.ready.databaseUrl as string)).toBe(true);
}, 150_000);

test('a postgres left running by a killed armada is stopped by the next armada migrate, which then succeeds', async () => {
  const killed = await runningInfra();
  const url = killed.ready.databaseUrl as string;
  killed.child.kill('SIGKILL'); // its postgres (and temporal) are orphans now
  await eventually(async () => killed.child.exitCode !== null || killed.child.signalCode !== null);
  expect(await answers(url)).toBe(true);
  const migrate = spawn(process.execPath, [ARMADA_BIN, 'migrate'], { env: env(pgPort), stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  migrate.stdout.on('data', (d) => (out += d));
  const code = await new Promise((resolve) => migrate.once('exit', resolve));
  expect(code).toBe(0);
  expect(out).toMatch(/database is up to date/);
}, 120_000);
