/**
 * A flow task's request leaves once per execution (docs/scheduler.md#task-outcomes): across a PostgreSQL freeze right
 * after the platform answered, and across the loss of the worker that sent it. The stack runs on a PostgreSQL of this
 * file's own (test/support/ownPostgres.ts), which the first test freezes for real (SIGSTOP of the postmaster and every
 * backend); the second runs the worker as its own process (`armada worker`) and kills it (SIGKILL) while the platform
 * holds the request.
 *
 * Before: the try that had its HTTP 200 wrote its log lines without heartbeating, so the freeze timed it out (3 s) and
 * the next try sent the flow again (two requests, and the platform ran the flow twice); and a try that found its
 * predecessor's worker gone sent again too, though the table of docs/scheduler.md#retries says an answer may be on
 * its way (sending again could run the flow twice).
 */
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { LOST_FLOW_ERROR } from '../../activities/scheduler/schedulerActivities';
import { FAKE_FLOWS, startFakeFlowBuilder, type FakeFlowBuilder } from '../support/fakeFlowBuilder';
import { eventually, startTestStack, type TestStack } from '../support/harness';
import { spawnStackWorker } from '../support/workerProcess';
import { startOwnPostgres, type OwnPostgres } from '../support/ownPostgres';
import { closeSchedulerStack, schedulerInject, type SchedulerInject } from '../support/schedulerStack';

jest.setTimeout(300_000);

let home: string;
let pg: OwnPostgres;
let stack: TestStack;
let fake: FakeFlowBuilder;
let inject: SchedulerInject;
let thaw: (() => void) | undefined;
const workers: ChildProcess[] = [];

beforeAll(async () => {
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-flow-once-'));
  pg = await startOwnPostgres(path.join(home, 'pg'));
  stack = await startTestStack({ services: ['scheduler'], worker: true, databaseUrl: pg.url, file: { scheduler: { healthCheckIntervalSeconds: 0 } } });
  fake = await startFakeFlowBuilder();
  inject = schedulerInject(stack);
}, 240_000);

afterAll(async () => {
  thaw?.();
  for (const w of workers) if (w.exitCode === null && w.signalCode === null) w.kill('SIGKILL');
  await fake?.close();
  if (stack) await closeSchedulerStack(stack);
  await pg?.close();
  if (home) fs.rmSync(home, { recursive: true, force: true });
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** The flow requests the platform got (with this input: each test's flow has its own). */
const runsSent = (input?: string) =>
  fake.requests.filter((r) => r.method === 'POST' && r.path === `/api/v1/run/${FAKE_FLOWS.summarise.id}` && (input === undefined || (r.body as { input_value?: string } | null)?.input_value === input)).length;

let sourceId: string | undefined;
/** The fake platform as a source (one per URL). */
async function flowSource(): Promise<string> {
  if (sourceId) return sourceId;
  const r = await inject('POST', '/api/v1/sources', { name: 'fake', source_type: 'langflow', url: fake.url });
  expect(r.statusCode).toBe(201);
  sourceId = r.json().id as string;
  return sourceId;
}

async function runToEnd(name: string, limitMs: number, sentAgain?: () => boolean): Promise<Record<string, unknown> & { tasks: Record<string, unknown>[] }> {
  const run = await inject('POST', `/api/v1/workflows/${name}/run`);
  expect(run.statusCode).toBe(200);
  const id = run.json().executionId as string;
  return eventually(async () => {
    if (sentAgain?.()) return { id, status: 'sent again', tasks: [] };
    const e = (await inject('GET', `/api/v1/executions/${id}`)).json();
    return e.status !== 'running' && e;
  }, limitMs);
}

async function startWorkerProcess(): Promise<ChildProcess> {
  const child = await spawnStackWorker(stack, { databaseUrl: pg.url, readyTimeoutMs: 120_000 });
  workers.push(child);
  return child;
}

test('PostgreSQL frozen (SIGSTOP) 1.5 s after the platform got the request, for 8 s: the flow was sent once and the task completed with its answer', async () => {
  const source = await flowSource();
  const created = await inject('POST', '/api/v1/workflows', {
    name: 'wf2',
    tasks: [
      { name: 's1', type: 'script', script: 'echo s1' },
      { name: 'f1', type: 'flow', source, flow: FAKE_FLOWS.summarise.id, input: 'once' },
    ],
  });
  expect(created.statusCode).toBe(201);
  fake.runDelayMs = 2000; // the answer arrives while PostgreSQL is frozen
  const before = runsSent();
  const ended = runToEnd('wf2', 120_000);
  await eventually(async () => runsSent() > before, 60_000, 20);
  await sleep(1500);
  thaw = pg.freeze();
  await sleep(8000);
  thaw();
  thaw = undefined;
  const e = await ended;
  fake.runDelayMs = 0;
  expect(runsSent() - before).toBe(1);
  expect(e).toMatchObject({ status: 'completed', error: null });
  expect(e.tasks.map((t) => t.status)).toEqual(['completed', 'completed']);
  expect(e.tasks[1]?.output).toContain('ran Summarise with once');
  const logs = (await inject('GET', `/api/v1/executions/${e.id}/logs`)).json().logs.map((l: { message: string }) => l.message);
  expect(logs.filter((m: string) => m.startsWith('POST flow'))).toHaveLength(1);
  expect(logs).toEqual(expect.arrayContaining(['Task f1 completed', 'Execution completed']));
});

/**
 * The two flows the next two tests follow, lost with one SIGKILL of the worker that sent them: one still in its local
 * try (inside the first workflow task), one already handed over to beginRun. Each waits for its lost try to time out
 * (beginRun's heartbeat timeout is 30 s) before its next try; with one kill those waits overlap instead of adding up.
 */
let lostWithWorker: Promise<{ localTry: Promise<Ended>; handedOver: Promise<Ended>; handedOverId: string }> | undefined;
type Ended = Awaited<ReturnType<typeof runToEnd>>;

function loseBothFlowsWithTheirWorker(): NonNullable<typeof lostWithWorker> {
  lostWithWorker ??= (async () => {
    await stack.workers?.stop(); // only worker processes from here on
    const first = await startWorkerProcess();
    const source = await flowSource();
    for (const [name, input] of [['first-flow', 'lost'], ['handed-over', 'handed']]) {
      expect((await inject('POST', '/api/v1/workflows', { name, tasks: [{ name: 'f1', type: 'flow', source, flow: FAKE_FLOWS.summarise.id, input }] })).statusCode).toBe(201);
    }
    fake.runDelayMs = 240_000; // no answer while the tests run
    // handed over first: the local start waits LOCAL_START_MS, then beginRun (dispatched to the same worker) awaits
    // the request in flight; both die with the worker, and the retried beginRun finds the local try's claim with no
    // sign of life
    const handedOver = runToEnd('handed-over', 180_000, () => runsSent('handed') > 1);
    await eventually(async () => runsSent('handed') > 0, 60_000, 20);
    // the request leaves once the row is held in its transaction; the commit follows
    const handedOverId = await eventually(async () => (await stack.db.query("SELECT id FROM scheduler_executions WHERE workflow = 'handed-over'")).rows[0]?.id as string, 10_000, 20);
    const client = await stack.temporal.client();
    // beginRun was scheduled: the local try handed over
    await eventually(async () => {
      const events = (await client.workflow.getHandle(`execution:${handedOverId}`).fetchHistory()).events ?? [];
      return events.some((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'beginRun');
    }, 30_000, 100);
    // then the other flow, killed while its local try holds the request
    const localTry = runToEnd('first-flow', 180_000, () => runsSent('lost') > 1);
    await eventually(async () => runsSent('lost') > 0, 60_000, 20);
    first.kill('SIGKILL');
    await new Promise((r) => first.once('exit', r));
    await startWorkerProcess();
    // Temporal runs each task again once the lost try's timeout passed; that try finds the request sent
    void Promise.allSettled([localTry, handedOver]).then(() => {
      fake.runDelayMs = 0;
    });
    return { localTry, handedOver, handedOverId };
  })();
  return lostWithWorker;
}

test('the worker is killed (SIGKILL) while the platform holds a first flow: the next try does not send it again; the task fails saying the answer is unknown', async () => {
  const e = await (await loseBothFlowsWithTheirWorker()).localTry;
  expect(runsSent('lost')).toBe(1);
  expect(e).toMatchObject({ status: 'failed', error: `Task f1 failed: ${LOST_FLOW_ERROR}` });
  expect(e.tasks[0]).toMatchObject({ name: 'f1', status: 'failed', error: LOST_FLOW_ERROR });
});

test('the worker is killed (SIGKILL) after its start handed the first flow over to beginRun: beginRun on the next worker does not send it again; the task fails saying the answer is unknown', async () => {
  const { handedOver, handedOverId } = await loseBothFlowsWithTheirWorker();
  const e = await handedOver;
  expect(runsSent('handed')).toBe(1);
  expect(e).toMatchObject({ status: 'failed', error: `Task f1 failed: ${LOST_FLOW_ERROR}` });
  const claim = await stack.db.query('SELECT state, attempt FROM scheduler_task_outcomes WHERE execution_id = $1 AND task_index = 0', [handedOverId]);
  expect(claim.rows[0]).toMatchObject({ state: 'done' });
  expect(claim.rows[0].attempt).toBeLessThan(0); // the local try's claim, recorded lost by the retried beginRun
});

test('the platform cannot be reached on the first try: the try gives the task back, the next one sends the request (once) and the task completes', async () => {
  if (!workers.some((w) => w.exitCode === null && w.signalCode === null)) await startWorkerProcess();
  const source = await flowSource();
  expect((await inject('POST', '/api/v1/workflows', { name: 'unreachable-first', tasks: [{ name: 'f1', type: 'flow', source, flow: FAKE_FLOWS.summarise.id, input: 'later' }] })).statusCode).toBe(201);
  await fake.stop();
  const before = runsSent();
  const ended = runToEnd('unreachable-first', 120_000);
  // the first try found the platform down (connection refused) and gave the task back
  await eventually(async () => (await stack.db.query("SELECT 1 FROM scheduler_task_outcomes WHERE state = 'unreachable'")).rowCount === 1, 60_000, 50);
  await fake.start();
  const e = await ended;
  expect(runsSent() - before).toBe(1);
  expect(e).toMatchObject({ status: 'completed', error: null });
  expect(e.tasks[0]?.output).toContain('ran Summarise with later');
});

test('a platform that can never be reached: three tries in all, the local one inside the first workflow task counted; the third try fails the task', async () => {
  if (!workers.some((w) => w.exitCode === null && w.signalCode === null)) await startWorkerProcess();
  const source = await flowSource();
  expect((await inject('POST', '/api/v1/workflows', { name: 'never-reached', tasks: [{ name: 'f1', type: 'flow', source, flow: FAKE_FLOWS.summarise.id, input: 'never' }] })).statusCode).toBe(201);
  // on the platform's port: a server that takes each connection and resets it at once (no answer: unreachable)
  await fake.stop();
  let connections = 0;
  const port = Number(new URL(fake.url).port);
  const resetting = net.createServer((socket) => {
    connections++;
    socket.resetAndDestroy();
  });
  await new Promise<void>((resolve, reject) => resetting.once('error', reject).listen(port, '127.0.0.1', () => resolve()));
  try {
    const e = await runToEnd('never-reached', 120_000);
    expect(e).toMatchObject({ status: 'failed' });
    expect(String(e.error)).toMatch(/^Task f1 failed: POST \/api\/v1\/run\/\S+ failed: /);
    expect(connections).toBe(3); // before: the local try, then beginRun's three attempts (4)
    const row = await stack.db.query('SELECT state, given_back FROM scheduler_task_outcomes WHERE execution_id = $1 AND task_index = 0', [e.id]);
    expect(row.rows[0]).toEqual({ state: 'done', given_back: 2 });
  } finally {
    await new Promise((r) => resetting.close(r));
    await fake.start();
  }
});
