/**
 * A follow-up draft (autoSend) or queue (autoExecute) starts its Temporal workflow inside the transaction that
 * inserts its row, so that no row is left `scheduled` without a workflow. The other side of that: the workflow runs
 * whether or not the row commits. These tests end the transaction at its COMMIT, after the start, as a PostgreSQL
 * restart or a kill -9 of the API does, and check what the attempt receives: nothing for a row that never committed
 * (its answer was a 503, or none at all), everything, once and in order, for one that did; and the 503 of a COMMIT
 * whose session ended says that its outcome is unknown, since the server may have committed before it went.
 *
 * The COMMIT is held by a deferred constraint trigger of the test's database (it sleeps in the commit of a draft or
 * queue item whose prompt starts with HOLD), so the moment is certain: the test sees the backend sleeping in its
 * COMMIT, then ends it (pg_terminate_backend, what a PostgreSQL restart does to every session) or lets it finish.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { NativeConnection, Worker } from '@temporalio/worker';
import { POSTGRES_OUTCOME_UNKNOWN } from '../../lib/db/releasedWhenDown';
import { createDependencyState } from '../../lib/runtime/dependencies';
import { spawnApi, type ApiProcess } from '../support/apiProcess';
import { createProjectAndTask, insertAttempt } from '../support/attempts';
import { holdCommitsOf } from '../support/holdCommit';
import { attemptStandInWorkflow, finishSignal, followUpsQuery } from '../support/attemptStandInWorkflow';
import { env, ensureTemporalRuntime, eventually, logger, startTestStack, TEST_API_KEY, type TestStack } from '../support/harness';

jest.setTimeout(180_000);

let stack: TestStack;
let taskId: string;
let standInWorker: Worker;
let standInConnection: NativeConnection;
let standInRun: Promise<void>;
const standInQueue = `attempt-standin-${crypto.randomBytes(4).toString('hex')}`;
const apiHome = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-followup-commit-'));
let api: ApiProcess | undefined;

/** An attempt row plus a running stand-in `attempt:<id>` workflow that records the follow-ups it is sent. */
async function attemptWithWorkflow() {
  const attemptId = await insertAttempt(stack, taskId);
  const client = await stack.temporal.client();
  const handle = await client.workflow.start(attemptStandInWorkflow, { workflowId: `attempt:${attemptId}`, taskQueue: standInQueue });
  return { attemptId, followUps: async () => handle.query(followUpsQuery), finish: () => handle.signal(finishSignal) };
}

/** The backend of this database sleeping in a held COMMIT (the trigger below), once there is one. */
async function heldCommit(): Promise<number> {
  return eventually(async () => {
    const { rows } = await stack.db.query<{ pid: number }>(
      "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND query = 'COMMIT' AND wait_event = 'PgSleep'",
    );
    return rows[0]?.pid;
  }, 30_000, 50);
}

/** Waits until every follow-up workflow of the stack's queue (of `type`) has closed, and returns how many there were. */
async function followUpWorkflowsClosed(type: 'followUpDraftWorkflow' | 'followUpQueueWorkflow', atLeast: number): Promise<number> {
  const client = await stack.temporal.client();
  return eventually(async () => {
    const runs: string[] = [];
    for await (const w of client.workflow.list({ query: `TaskQueue = '${stack.config.temporal.taskQueue}' AND WorkflowType = '${type}'` })) runs.push(w.status.name);
    return runs.length >= atLeast && runs.every((s) => s !== 'RUNNING') ? runs.length : undefined;
  }, 60_000, 250);
}

beforeAll(async () => {
  // with dependency tracking, as `armada api` runs: its pool says when a write's outcome is unknown
  stack = await startTestStack({ services: ['task'], worker: true, dependencies: createDependencyState(logger) });
  ({ taskId } = await createProjectAndTask(stack));
  // sleeps in the COMMIT of a follow-up draft or queue item whose prompt starts with HOLD (HOLD-LONG: 60 s, else 3 s)
  await holdCommitsOf(stack.db, [
    { table: 'follow_up_drafts', column: 'prompt' },
    { table: 'follow_up_queue_items', column: 'prompt' },
  ]);
  ensureTemporalRuntime();
  standInConnection = await NativeConnection.connect({ address: env('ARMADA_TEST_TEMPORAL_ADDRESS') });
  standInWorker = await Worker.create({
    connection: standInConnection,
    namespace: stack.config.temporal.namespace,
    taskQueue: standInQueue,
    workflowsPath: path.join(__dirname, '..', 'support', 'attemptStandInWorkflow.ts'),
  });
  standInRun = standInWorker.run();
}, 120_000);
afterAll(async () => {
  await api?.stop();
  standInWorker?.shutdown();
  await standInRun;
  await standInConnection?.close();
  await stack?.close();
  fs.rmSync(apiHome, { recursive: true, force: true });
});

test('a follow-up draft whose COMMIT dies after its workflow started (PostgreSQL ended the session): 503, no row, and the attempt is sent nothing', async () => {
  const a = await attemptWithWorkflow();
  const answer = stack.app('task').inject({ method: 'POST', url: `/api/task-attempts/${a.attemptId}/follow-up-draft`, payload: { prompt: 'HOLD-LONG: never stored', autoSend: true } });
  const pid = await heldCommit();
  // the workflow was started before the COMMIT was sent
  await stack.db.query('SELECT pg_terminate_backend($1)', [pid]);
  const r = await answer;
  expect(r.statusCode).toBe(503);
  // the COMMIT was sent when the session ended: it might have committed first, so the answer cannot say "try again"
  expect(r.json()).toMatchObject({ success: false, error: { code: 'SERVICE_UNAVAILABLE', message: POSTGRES_OUTCOME_UNKNOWN, details: { outcome: 'unknown' } } });
  expect((await stack.db.query('SELECT count(*)::int AS n FROM follow_up_drafts WHERE task_attempt_id = $1', [a.attemptId])).rows[0].n).toBe(0);
  await followUpWorkflowsClosed('followUpDraftWorkflow', 1);
  expect(await a.followUps()).toEqual([]);

  // a draft sent again is stored and sent, once
  const again = await stack.app('task').inject({ method: 'POST', url: `/api/task-attempts/${a.attemptId}/follow-up-draft`, payload: { prompt: 'stored this time', autoSend: true } });
  expect(again.statusCode).toBe(201);
  await eventually(async () => (await stack.db.query("SELECT 1 FROM follow_up_drafts WHERE id = $1 AND status = 'sent'", [again.json().data.id])).rowCount);
  expect((await a.followUps()).map((f) => [f.prompt, f.draftId])).toEqual([['stored this time', again.json().data.id]]);
  await a.finish();
});

describe('kill -9 of armada api while a follow-up queue commits', () => {
  const post = (attemptId: string, queue: { prompt: string; order: number }[]) =>
    fetch(`${api?.base('task')}/api/task-attempts/${attemptId}/follow-up-queue`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': TEST_API_KEY },
      body: JSON.stringify({ autoExecute: true, queue }),
    }).then(
      (r) => r.status,
      () => 'no answer' as const,
    );
  const startApi = async () => {
    api = await spawnApi({ home: apiHome, databaseUrl: stack.dbUrl, services: ['task'], env: { ARMADA_TASK_QUEUE: stack.config.temporal.taskQueue } });
    return api;
  };

  test('its transaction rolled back: no row, and the attempt is sent none of the prompts', async () => {
    const a = await attemptWithWorkflow();
    const running = await startApi();
    const answer = post(a.attemptId, [
      { prompt: 'HOLD-LONG first', order: 1 },
      { prompt: 'second', order: 2 },
    ]);
    const pid = await heldCommit();
    running.child.kill('SIGKILL');
    await stack.db.query('SELECT pg_terminate_backend($1)', [pid]); // as PostgreSQL's restart would: the session ends uncommitted
    expect(await answer).toBe('no answer');
    expect((await stack.db.query('SELECT count(*)::int AS n FROM follow_up_queues WHERE task_attempt_id = $1', [a.attemptId])).rows[0].n).toBe(0);
    await followUpWorkflowsClosed('followUpQueueWorkflow', 1);
    expect(await a.followUps()).toEqual([]);
    await a.finish();
  });

  test('its COMMIT landed after the kill: the queue is stored and every prompt is sent once, in order', async () => {
    const a = await attemptWithWorkflow();
    const running = await startApi();
    const answer = post(a.attemptId, [
      { prompt: 'HOLD first', order: 1 },
      { prompt: 'second', order: 2 },
      { prompt: 'third', order: 3 },
    ]);
    await heldCommit();
    running.child.kill('SIGKILL'); // the server finishes the COMMIT on its own (3 s), with nobody to answer
    expect(await answer).toBe('no answer');
    const queue = await eventually(async () => (await stack.db.query<{ id: string }>('SELECT id FROM follow_up_queues WHERE task_attempt_id = $1', [a.attemptId])).rows[0], 20_000);
    await eventually(async () => (await stack.db.query("SELECT count(*)::int AS n FROM follow_up_queue_items WHERE queue_id = $1 AND status = 'sent'", [queue.id])).rows[0].n === 3, 30_000);
    expect((await a.followUps()).map((f) => f.prompt)).toEqual(['HOLD first', 'second', 'third']);
    await a.finish();
  });
});
