/**
 * SIGHUP (a terminal or an ssh session closed) stops armada the way SIGTERM does, in order, leaving nothing running.
 * It used to kill the process at once, with no log line, and leave PostgreSQL, Temporal and running agents behind.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnArmada } from '../support/armadaProcess';
import { startArmada } from '../support/armadaStart';
import { eventually } from '../support/harness';
import { killProcessesUsing, processesUsing } from '../support/processes';
const { freePort } = require('../support/ports') as { freePort(): Promise<number> };

jest.setTimeout(300_000);

let home: string;

beforeEach(() => {
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-hangup-'));
});
afterEach(() => {
  killProcessesUsing(home);
  fs.rmSync(home, { recursive: true, force: true });
});

test('armada start: SIGHUP is an ordered stop, exit 0, no server left running', async () => {
  const armada = await startArmada(home, { ARMADA_LOG_LEVEL: 'info' });
  expect(processesUsing(home).length).toBeGreaterThan(0);
  process.kill(armada.child.pid as number, 'SIGHUP');
  expect(await armada.exited).toBe(0);
  expect(armada.output()).toMatch(/"signal":"SIGHUP".*"msg":"shutting down"/);
  expect(armada.output()).toContain('armada stopped');
  await eventually(async () => processesUsing(home).length === 0, 30_000, 200);
});

test('armada infra: SIGHUP stops its servers and exits 0', async () => {
  const env = { ...process.env, ARMADA_HOME: home, ARMADA_LOG_LEVEL: 'info', DATABASE_URL: '', TEMPORAL_ADDRESS: '' };
  const infra = await spawnArmada(['infra', '--home', home, '--pg-port', String(await freePort()), '--temporal-port', String(await freePort())], 'ready', env);
  const exited = new Promise<number | null>((resolve) => infra.child.once('exit', (code) => resolve(code)));
  process.kill(infra.child.pid as number, 'SIGHUP');
  expect(await exited).toBe(0);
  expect(infra.lines.join('\n')).toMatch(/"signal":"SIGHUP".*"msg":"shutting down"/);
  await eventually(async () => processesUsing(home).length === 0, 30_000, 200);
});
