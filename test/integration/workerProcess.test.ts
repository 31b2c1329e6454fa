/** `armada worker` as a separate process: its health port, metrics, drain over HTTP and SIGTERM. */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { ARMADA_BIN, spawnArmada } from '../support/armadaProcess';
import { createTestDatabase, env, eventually } from '../support/harness';
import { startUnansweringTemporal } from '../support/unansweringTemporal';

const { freePort } = require('../support/ports') as { freePort(): Promise<number> };

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

const workerEnv = (temporalAddress = env('ARMADA_TEST_TEMPORAL_ADDRESS')): NodeJS.ProcessEnv => ({
  ...process.env,
  ARMADA_HOME: home,
  ARMADA_CONFIG: '',
  DATABASE_URL: database.url,
  TEMPORAL_ADDRESS: temporalAddress,
  ARMADA_TASK_QUEUE: `worker-test-${process.pid}-${Date.now()}`,
  ARMADA_LOG_LEVEL: 'warn',
});

async function startWorker(extraArgs: string[] = []): Promise<{ child: ChildProcess; started: { identity: string; queues: string[]; health: string }; lines: string[] }> {
  const p = await spawnArmada(['worker', '--health-port', '0', '--grace', '2', ...extraArgs], 'worker-started', workerEnv());
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

/** `armada worker` on `healthPort` against `temporalAddress`, not waiting for its started line (it comes once it polls). */
function spawnWorker(healthPort: number, temporalAddress: string): { child: ChildProcess; output: () => string; exit: Promise<number | null> } {
  const child = spawn(process.execPath, [ARMADA_BIN, 'worker', '--health-port', String(healthPort), '--grace', '2'], { env: workerEnv(temporalAddress), stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout?.on('data', (d) => (output += d.toString()));
  child.stderr?.on('data', (d) => (output += d.toString()));
  return { child, output: () => output, exit: exited(child) };
}

const getJson = async (url: string): Promise<{ status: number; body: Record<string, unknown> }> => {
  const r = await fetch(url);
  return { status: r.status, body: (await r.json()) as Record<string, unknown> };
};

/** The first answer of the health port (it takes the process's start, a few seconds under tsx). */
const firstAnswer = (url: string) => eventually(() => getJson(url).catch(() => undefined), 60_000, 200);

test('the health port answers from the start: liveness 200 and readiness 503 saying it waits for a Temporal that is not listening, then 200 once the workers poll', async () => {
  const [healthPort, temporalPort] = [await freePort(), await freePort()];
  const address = `127.0.0.1:${temporalPort}`; // nothing listens there yet
  const base = `http://127.0.0.1:${healthPort}`;
  const worker = spawnWorker(healthPort, address);
  let relay: net.Server | undefined;
  try {
    // before: the port opened only once the workers polled, so a probe meanwhile found the connection refused, and
    // a Temporal refusing the connection at start ended the worker (exit 1)
    const waiting = await firstAnswer(`${base}/health`);
    expect(waiting).toMatchObject({ status: 503, body: { status: 'starting', service: 'worker' } });
    expect(waiting.body.waiting).toMatch(new RegExp(`^waiting for Temporal at ${address}`));
    expect(await getJson(`${base}/health/live`)).toMatchObject({ status: 200, body: { status: 'alive', service: 'worker' } });
    // the connection is refused and tried again: the readiness answer says so, and one warning line
    await eventually(async () => String((await getJson(`${base}/health`)).body.waiting).includes('to take the connection'), 30_000, 200);
    expect(worker.output()).toContain(`Temporal at ${address} cannot be reached`);
    expect(worker.output()).not.toContain('"worker-started"');

    // Temporal listens there now (a relay to the test's server): the workers poll, readiness is 200
    const [upHost, upPort] = [env('ARMADA_TEST_TEMPORAL_ADDRESS').split(':')[0], Number(env('ARMADA_TEST_TEMPORAL_ADDRESS').split(':')[1])];
    relay = net.createServer((c) => {
      const up = net.connect(upPort, upHost);
      c.pipe(up).pipe(c);
      c.on('error', () => up.destroy());
      up.on('error', () => c.destroy());
    });
    await new Promise<void>((resolve) => relay?.listen(temporalPort, '127.0.0.1', () => resolve()));
    const ready = await eventually(async () => {
      const h = await getJson(`${base}/health`);
      return h.status === 200 && h;
    }, 60_000, 250);
    expect(ready.body).toMatchObject({ status: 'ok', service: 'worker' });
    expect(worker.output()).toContain('"worker-started"');
    expect((await fetch(`${base}/drain`, { method: 'POST' })).status).toBe(202);
    expect(await worker.exit).toBe(0);
  } finally {
    if (worker.child.exitCode === null && worker.child.signalCode === null) worker.child.kill('SIGKILL');
    await new Promise((r) => (relay ? relay.close(r) : r(undefined)));
  }
});

test('a Temporal that takes the connection and answers nothing: readiness says the start waits for the search attribute check; POST /drain then ends the wait: exit 0, without a started line', async () => {
  const silent = await startUnansweringTemporal(); // answers GetSystemInfo, the connect's call, and no other
  const healthPort = await freePort();
  const base = `http://127.0.0.1:${healthPort}`;
  const worker = spawnWorker(healthPort, silent.address);
  try {
    expect(await firstAnswer(`${base}/health`)).toMatchObject({ status: 503, body: { status: 'starting' } });
    // the check's first try waits 5 s for its answer, then is tried again every 5 s
    const checking = await eventually(async () => {
      const h = await getJson(`${base}/health`);
      return String(h.body.waiting).includes('to answer the search attribute check') && h;
    }, 30_000, 250);
    expect(checking).toMatchObject({ status: 503, body: { status: 'starting', service: 'worker' } });
    expect(checking.body.waiting).toMatch(new RegExp(`^waiting for Temporal at ${silent.address} to answer the search attribute check of namespace ".+" \\(trying again every 5 s\\)$`));
    expect((await getJson(`${base}/health/live`)).status).toBe(200);
    expect((await fetch(`${base}/drain`, { method: 'POST' })).status).toBe(202);
    expect(await worker.exit).toBe(0);
    expect(worker.output()).toContain('"worker-stopped"');
    expect(worker.output()).not.toContain('"worker-started"');
  } finally {
    if (worker.child.exitCode === null && worker.child.signalCode === null) worker.child.kill('SIGKILL');
    await silent.close();
  }
});
