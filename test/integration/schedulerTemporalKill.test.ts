/**
 * kill -9 of the Temporal dev server right after the scheduler API accepted a manual run (its POST …/run answered
 * 200), then a restart on the same SQLite file (docs/scheduler.md, "Execution model"; docs/operations.md). The test
 * owns its dev server (the runtime code of `armada start`, lib/runtime/temporalDevServer.ts) and runs `armada api
 * --service scheduler` and `armada worker` as processes of their own against it and a database of its own.
 *
 * Checked: the accepted run happens exactly once once Temporal is back (its script appends one line to a file, with
 * its execution id), and its execution row ends `completed` with its log lines; while Temporal is down, the same POST
 * answers 503 `{detail}` with Retry-After in well under the 10 s start deadline, and what it wrote never runs; the same
 * API process serves runs again by itself afterwards. And the server killed across several due times of an `@every 3s`
 * schedule, then started again: exactly one catch-up run of the times missed (the catch-up window with SKIP overlap,
 * docs/scheduler.md#catch-up), then the cadence, each run's script once and none left running. And the server's SQLite
 * file locked by another process so that its reads hang (its frontend still answers GetSystemInfo): /health says
 * Temporal is down and why, runs meanwhile are fast 503s, and both recover by themselves once the lock is let go.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { RunningDevServer } from '../../lib/runtime/temporalDevServer';
import { spawnApi, type ApiProcess } from '../support/apiProcess';
import { spawnArmada } from '../support/armadaProcess';
import { createTestDatabase, eventually, TEST_API_KEY } from '../support/harness';
import { timedRequest, type TimedAnswer } from '../support/timedRequest';
import { startOwnTemporal, stopChild } from '../support/ownTemporal';


jest.setTimeout(300_000);

let home: string;
let dev: RunningDevServer;
let db: Awaited<ReturnType<typeof createTestDatabase>>;
let api: ApiProcess;
let worker: ChildProcess | undefined;
let marker: string;

beforeAll(async () => {
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-sched-temporal-kill-'));
  marker = path.join(home, 'runs.txt');
  dev = await startOwnTemporal(home);
  db = await createTestDatabase();
  const queue = `sched-temporal-kill-${crypto.randomBytes(4).toString('hex')}`;
  api = await spawnApi({ home, databaseUrl: db.url, temporalAddress: dev.address, services: ['scheduler'], env: { ARMADA_TASK_QUEUE: queue } });
  worker = (
    await spawnArmada(
      ['worker'],
      'worker-started',
      {
        ...process.env,
        ARMADA_HOME: home,
        ARMADA_CONFIG: '',
        DATABASE_URL: db.url,
        TEMPORAL_ADDRESS: dev.address,
        ARMADA_TASK_QUEUE: queue,
        ARMADA_LOG_LEVEL: 'warn',
        ARMADA_LOG_FORMAT: 'json',
        ARMADA_TEMPORAL_METRICS_PORT: '',
      },
      180_000,
    )
  ).child;
}, 300_000);

afterAll(async () => {
  await stopChild(worker);
  await api?.stop();
  await dev?.stop();
  await db?.drop();
  if (home) fs.rmSync(home, { recursive: true, force: true });
});

const send = (method: 'GET' | 'POST', url: string, payload?: unknown, timeoutMs = 60_000): Promise<TimedAnswer> =>
  timedRequest(`${api.base('scheduler')}${url}`, { method, payload, headers: { 'x-api-key': TEST_API_KEY }, timeoutMs });

/** The execution ids the marker file names, one line per run of the script. */
const runsInMarker = (): string[] => (fs.existsSync(marker) ? fs.readFileSync(marker, 'utf8').split('\n').filter(Boolean) : []);

async function finished(id: string, timeoutMs = 120_000): Promise<Record<string, unknown>> {
  return eventually(async () => {
    const e = await send('GET', `/api/v1/executions/${id}`);
    return e.status === 200 && e.body.status !== 'running' ? e.body : undefined;
  }, timeoutMs, 250);
}

test('Temporal killed (kill -9) right after a manual run was accepted: the run happens once when it is back, completed with its logs; POSTs meanwhile are fast 503s that never run', async () => {
  const name = `killed-${crypto.randomBytes(4).toString('hex')}`;
  const script = `echo "$ARMADA_EXECUTION_ID" >> ${JSON.stringify(marker)}; echo "script began"; sleep 1; echo "script ended"`;
  const created = await send('POST', '/api/v1/workflows', { name, tasks: [{ name: 'mark', type: 'script', script, timeout: 60 }] });
  expect(created.status).toBe(201);

  const accepted = await send('POST', `/api/v1/workflows/${name}/run`);
  expect(accepted.status).toBe(200);
  const id = accepted.body.executionId as string;
  const apiPid = api.child.pid;
  process.kill(dev.server().pid as number, 'SIGKILL');
  await dev.server().exited;

  // at once (before anything noticed the loss) and once the API's probe calls Temporal down
  const rightAfter = await send('POST', `/api/v1/workflows/${name}/run`);
  await eventually(async () => {
    const h = await send('GET', '/health');
    return h.status === 503 && JSON.stringify(h.body.down) === '["temporal"]';
  }, 30_000, 250);
  const whileDown = await send('POST', `/api/v1/workflows/${name}/run`);
  for (const a of [rightAfter, whileDown]) {
    expect(a).toMatchObject({ status: 503, retryAfter: '1', body: { detail: 'Could not start the execution: Temporal is unavailable' } });
    expect(Object.keys(a.body)).toEqual(['detail']);
  }
  // fast: a refused connection, not the 10 s start deadline
  expect(whileDown.ms).toBeLessThan(5000);
  await new Promise((r) => setTimeout(r, 3000));

  await dev.restart();
  const done = await finished(id);
  expect(done).toMatchObject({ id, workflow: name, status: 'completed', trigger: 'manual' });
  expect((done.tasks as { status: string; output: string }[])[0]).toMatchObject({ status: 'completed', output: 'script began\nscript ended\n' });
  const logs = await send('GET', `/api/v1/executions/${id}/logs`);
  const messages = (logs.body.logs as { message: string }[]).map((l) => l.message);
  expect(messages).toEqual(expect.arrayContaining(['Task mark started', 'script began', 'script ended', 'Execution completed']));
  expect(messages.filter((m) => m === 'script began')).toHaveLength(1);

  // served again by the same process, which was never restarted
  const again = await eventually(async () => {
    const a = await send('POST', `/api/v1/workflows/${name}/run`);
    return a.status === 200 ? a : undefined;
  }, 60_000, 250);
  const next = await finished(again.body.executionId as string);
  expect(next).toMatchObject({ status: 'completed' });
  expect(api.child.pid).toBe(apiPid);
  expect(api.child.exitCode).toBeNull();

  // the accepted run ran once, the later one once, and nothing a 503 wrote ran at all
  await new Promise((r) => setTimeout(r, 3000));
  expect(runsInMarker()).toEqual([id, again.body.executionId]);
  const rows = (await db.pool.query<{ id: string; status: string; error: string | null }>('SELECT id, status, error FROM scheduler_executions WHERE workflow = $1', [name])).rows;
  const others = rows.filter((r) => r.id !== id && r.id !== again.body.executionId);
  for (const r of others) expect(r).toMatchObject({ status: 'failed', error: 'Could not start the execution' });
});

interface Execution {
  id: string;
  status: string;
  trigger: string;
  scheduledAt: string | null;
}

async function executionsOf(workflow: string): Promise<Execution[]> {
  const r = await send('GET', `/api/v1/executions?workflow=${workflow}&limit=100`);
  expect(r.status).toBe(200);
  return (r.body.executions as Execution[]).slice().sort((a, b) => Date.parse(a.scheduledAt as string) - Date.parse(b.scheduledAt as string));
}

test('Temporal killed (kill -9) across several due times of a schedule, then started again: one catch-up run, then the cadence; every run once, none left running', async () => {
  const name = `every-${crypto.randomBytes(4).toString('hex')}`;
  const runs = path.join(home, `${name}.txt`);
  const script = `echo "$ARMADA_EXECUTION_ID" >> ${JSON.stringify(runs)}`;
  const created = await send('POST', '/api/v1/workflows', { name, schedule: '@every 3s', tasks: [{ name: 'mark', type: 'script', script, timeout: 60 }] });
  expect(created.status).toBe(201);
  const completed = async (after: number) => (await executionsOf(name)).filter((e) => e.status === 'completed' && Date.parse(e.scheduledAt as string) >= after);
  await eventually(async () => (await completed(0)).length >= 2, 60_000, 250);
  // the kill right after a run ended, so none is half-way (a run cut by the kill is the first test's case)
  await eventually(async () => !(await executionsOf(name)).some((e) => e.status === 'running'), 30_000, 50);
  const seenBefore = new Set((await executionsOf(name)).map((e) => e.id));

  const downAt = Date.now();
  process.kill(dev.server().pid as number, 'SIGKILL');
  await dev.server().exited;
  await new Promise((r) => setTimeout(r, 12_000)); // four due times
  await dev.restart();
  const upAt = Date.now();

  // the cadence again: two runs due after the restart have completed
  await eventually(async () => (await completed(upAt)).length >= 2, 120_000, 250);
  expect((await send('POST', `/api/v1/schedules/${name}/pause`)).status).toBe(200);
  await eventually(async () => !(await executionsOf(name)).some((e) => e.status === 'running'), 60_000, 250);

  const all = await executionsOf(name);
  expect(all.map((e) => [e.trigger, e.status])).toEqual(all.map(() => ['schedule', 'completed']));
  expect(new Set(all.map((e) => e.scheduledAt)).size).toBe(all.length); // no nominal time ran twice
  // exactly one run of the times that fell due while the server was down: the catch-up, neither none nor a burst
  const missed = all.filter((e) => !seenBefore.has(e.id) && Date.parse(e.scheduledAt as string) < upAt);
  expect(missed).toHaveLength(1);
  expect(Date.parse(missed[0]?.scheduledAt as string)).toBeGreaterThan(downAt - 3000);
  // each run's script ran once
  const lines = fs.readFileSync(runs, 'utf8').split('\n').filter(Boolean);
  expect(lines.slice().sort()).toEqual(all.map((e) => e.id).sort());
});

/**
 * Holds every lock of the WAL index of SQLite file `db` (its `-shm` file: the writer's, the checkpointer's, recovery's
 * and the five readers' locks, bytes 120-127, https://sqlite.org/walformat.html), from a process of its own, as a
 * stuck process or a hung disk would: the dev server's reads and writes then wait (each read retries for about 10 s,
 * on the server's one connection) while its frontend answers GetSystemInfo from memory. Resolves once it holds them.
 * (A plain `BEGIN EXCLUSIVE` takes only the writer's lock in WAL mode: the server's first write then fails at once,
 * its shard's status turns unknown, and its calls fail UNAVAILABLE in about 0.5 s instead of waiting; checked by hand.)
 */
async function lockSqliteWalIndex(db: string): Promise<ChildProcess> {
  const script = [
    'import fcntl, os, sys, time',
    "fd = os.open(sys.argv[1] + '-shm', os.O_RDWR)",
    'for _ in range(2000):',
    '    try:',
    '        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 8, 120, os.SEEK_SET)',
    '        break',
    '    except OSError:',
    '        time.sleep(0.005)',
    'else:',
    "    sys.exit('the WAL index stayed locked by the server')",
    "print('locked', flush=True)",
    'time.sleep(600)',
  ].join('\n');
  const child = spawn('python3', ['-c', script, db], { stdio: ['ignore', 'pipe', 'pipe'] });
  let err = '';
  child.stderr?.on('data', (d) => (err += String(d)));
  await new Promise<void>((resolve, reject) => {
    child.stdout?.on('data', (d) => String(d).includes('locked') && resolve());
    child.once('exit', (code) => reject(new Error(`the lock holder exited ${code}: ${err}`)));
  });
  return child;
}

test("Temporal's SQLite file locked by another process (reads and writes hang, GetSystemInfo answers): /health 503 names Temporal and why within seconds, runs answer 503 fast, and once the lock is let go both recover by themselves", async () => {
  const name = `locked-${crypto.randomBytes(4).toString('hex')}`;
  const runs = path.join(home, `${name}.txt`);
  const created = await send('POST', '/api/v1/workflows', { name, tasks: [{ name: 'mark', type: 'script', script: `echo "$ARMADA_EXECUTION_ID" >> ${JSON.stringify(runs)}`, timeout: 60 }] });
  expect(created.status).toBe(201);
  await eventually(async () => (await send('GET', '/health')).status === 200, 60_000, 250);

  const locker = await lockSqliteWalIndex(path.join(home, 'temporal.db'));
  try {
    const lockedAt = Date.now();
    // sent before anything knew: it waits on the hung server until the probe calls Temporal down, then is released
    const rightAfter = send('POST', `/api/v1/workflows/${name}/run`);
    const health = await eventually(async () => {
      const h = await send('GET', '/health');
      return h.status === 503 && JSON.stringify(h.body.down) === '["temporal"]' ? h : undefined;
    }, 30_000, 250);
    // about 6 s (three probes of 1.5 s, a second apart); before, /health stayed 200 for as long as the lock was held
    expect(Date.now() - lockedAt).toBeLessThan(20_000);
    expect(health.body.reasons).toEqual({ temporal: expect.stringMatching(/^DescribeWorkflowExecution \(a read of its persistence\): /) });
    const whileDown = await send('POST', `/api/v1/workflows/${name}/run`);
    for (const a of [await rightAfter, whileDown]) {
      expect(a).toMatchObject({ status: 503, retryAfter: '1', body: { detail: 'Could not start the execution: Temporal is unavailable' } });
      expect(Object.keys(a.body)).toEqual(['detail']);
    }
    // at once: the API knows, where it used to wait for the start's 10 s deadline
    expect(whileDown.ms).toBeLessThan(5000);
  } finally {
    locker.kill('SIGKILL');
  }

  // ready again and served by the same process, with nothing restarted
  await eventually(async () => (await send('GET', '/health')).status === 200, 30_000, 250);
  const again = await eventually(async () => {
    const a = await send('POST', `/api/v1/workflows/${name}/run`);
    return a.status === 200 ? a : undefined;
  }, 30_000, 250);
  expect(await finished(again.body.executionId as string)).toMatchObject({ status: 'completed' });
  // the runs answered 503 never ran
  await new Promise((r) => setTimeout(r, 2000));
  expect(fs.readFileSync(runs, 'utf8').split('\n').filter(Boolean)).toEqual([again.body.executionId]);
});
