/** `armada worker` as a separate process: its health port, metrics, drain over HTTP and SIGTERM. */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ARMADA_BIN, spawnArmada } from '../support/armadaProcess';
import { createTestDatabase, env } from '../support/harness';

jest.setTimeout(120_000);

let database: Awaited<ReturnType<typeof createTestDatabase>>;
let home: string;
beforeAll(async () => {
  database = await createTestDatabase();
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-worker-'));
});
afterAll(async () => {
  await database.drop();
  fs.rmSync(home, { recursive: true, force: true });
});

async function startWorker(extraArgs: string[] = []): Promise<{ child: ChildProcess; started: { identity: string; queues: string[]; health: string }; lines: string[] }> {
  const p = await spawnArmada(['worker', '--health-port', '0', '--grace', '2', ...extraArgs], 'worker-started', {
    ...process.env,
    ARMADA_HOME: home,
    ARMADA_CONFIG: '',
    DATABASE_URL: database.url,
    TEMPORAL_ADDRESS: env('ARMADA_TEST_TEMPORAL_ADDRESS'),
    ARMADA_TASK_QUEUE: `worker-test-${process.pid}-${Date.now()}`,
    ARMADA_LOG_LEVEL: 'warn',
  });
  return { child: p.child, started: p.ready as { identity: string; queues: string[]; health: string }, lines: p.lines };
}

const exited = (child: ChildProcess) => new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));

test('the health port answers /health and /metrics; POST /drain stops the worker cleanly', async () => {
  const { child, started, lines } = await startWorker(['--identity', 'worker-under-test']);
  expect(started.identity).toBe('worker-under-test');
  expect(started.queues).toHaveLength(2); // the shared queue and this host's queue
  const health = await fetch(`${started.health}/health`);
  expect(health.status).toBe(200);
  expect(await health.json()).toMatchObject({ status: 'ok', service: 'worker', identity: 'worker-under-test' });
  const metrics = await fetch(`${started.health}/metrics`);
  expect(metrics.status).toBe(200);
  expect(await metrics.text()).toContain('armada_process_');
  const done = exited(child);
  const drain = await fetch(`${started.health}/drain`, { method: 'POST' });
  expect(drain.status).toBe(202);
  expect(await done).toBe(0);
  expect(lines.some((l) => l.includes('"worker-stopped"'))).toBe(true);
});

test('SIGTERM drains and exits 0', async () => {
  const { child } = await startWorker();
  let err = '';
  child.stderr?.on('data', (d) => (err += d.toString()));
  const done = new Promise<string>((resolve) => child.once('exit', (code, signal) => resolve(`${code}/${signal}`)));
  child.kill('SIGTERM');
  expect(`${await done} ${err}`).toBe('0/null ');
});

test('bad flags are refused with a clear message', async () => {
  const cases: [string[], string][] = [
    [['--concurrency', '0'], '--concurrency must be an integer ≥ 1'],
    [['--max-agents', '0'], '--max-agents must be an integer ≥ 1'],
    [['--grace=-1'], '--grace must be an integer ≥ 0'],
    // past a timer's range: the last resort's timer (grace + 15 s) fired after 1 ms and exited a draining worker at once
    [['--grace=10000000000'], '--grace must be an integer from 0 to 2147468'],
    [['--health-port=70000'], '--health-port must be an integer from 0 to 65535'],
  ];
  for (const [flags, message] of cases) {
    const child = spawn(process.execPath, [ARMADA_BIN, 'worker', ...flags], { env: { ...process.env, DATABASE_URL: database.url }, stdio: ['ignore', 'pipe', 'pipe'] });
    let err = '';
    child.stderr?.on('data', (d) => (err += d.toString()));
    expect(await exited(child)).toBe(1);
    expect(err).toContain(message);
  }
});
