/**
 * The task service's Temporal calls made inside an open PostgreSQL transaction are bounded by
 * `ARMADA_API_TEMPORAL_IN_TRANSACTION_TIMEOUT_MS` (2 s here; 10 s by default, under the API's 30 s
 * idle_in_transaction_session_timeout): a Temporal that takes the request and holds its answer (a TCP proxy in front
 * of the run's dev server, `holdAnswers`; the worker reaches Temporal directly) gets a 503 "try again" naming the
 * bound, the transaction rolled back (no session left idle in transaction, no row half-written, a workflow the start
 * did begin ends having done nothing), and the request sent again once Temporal answers succeeds once. Covered: a
 * follow-up draft with autoSend, a project's clone, a delete of an attempt with a pending approval (its approvals'
 * cancels before the delete, cancelApprovalsOfAttempts), and the cancels made with the rows locked
 * (deleteWithApprovals). Before, each waited on the held answer without a limit, its transaction idle and its rows
 * locked (or, for the delete's first cancels, a transaction open across them all).
 *
 * The calls a request waits for outside a transaction are bounded by `attempts.startTimeoutMs` (2 s here, as for an
 * attempt's start): a follow-up queue's "is the attempt running" and a delete's workflow cancel answer the 503 within
 * it, nothing made or deleted; a follow-up's signal answers the 503 within it saying the follow-up may or may not
 * have been delivered and where to look (its workflow may have taken it; with an Idempotency-Key: send it again with
 * that key); an attempt's and a task's cancel, committed before the workflow's cancel, answer the
 * 200 of what was done within it. Before, each waited on the held answer without a limit.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import type { Pool } from 'pg';
import { buildService } from '../../api/services';
import { reconcileOwedCancels } from '../../api/task/attemptService';
import { attemptWorkflowId } from '../../workflows/attemptMessages';
import { deleteWithApprovals } from '../../api/task/approvalsOfDeletedAttempts';
import { deleteAttemptRow } from '../../lib/db/attempts';
import { createPool, sessionLimits } from '../../lib/db/pool';
import { AppError } from '../../lib/errors';
import { createMetrics } from '../../lib/metrics';
import { createTemporalHandle, type TemporalHandle } from '../../lib/temporal/client';
import { approvalOutcomes } from '../support/approvalOutcomes';
import { createProjectAndTask, insertAttempt } from '../support/attempts';
import { env, eventually, logger, makeGitRepo, startTestStack, TEST_API_KEY, type TestStack } from '../support/harness';
import { startTcpProxy, type TcpProxy } from '../support/tcpProxy';

jest.setTimeout(120_000);

const BOUND_MS = 2000;
const API_SESSIONS = 'armada-api-held-temporal';
let stack: TestStack;
let taskId: string;
let proxy: TcpProxy;
let proxied: TemporalHandle;
let apiPool: Pool;
let app: FastifyInstance;
const metrics = createMetrics();

beforeAll(async () => {
  stack = await startTestStack({ services: ['task'], worker: true, env: { ARMADA_API_TEMPORAL_IN_TRANSACTION_TIMEOUT_MS: String(BOUND_MS) } });
  ({ taskId } = await createProjectAndTask(stack));
  proxy = await startTcpProxy(env('ARMADA_TEST_TEMPORAL_ADDRESS'));
  proxied = createTemporalHandle(proxy.address, stack.config.temporal.namespace);
  // the API's own limits (idle_in_transaction_session_timeout 30 s), as `armada api`'s pool has them
  apiPool = createPool(stack.dbUrl, logger, { max: 10, application_name: API_SESSIONS, ...sessionLimits(stack.config.apiDatabaseLimits) });
  // attempts.startTimeoutMs bounds the calls outside a transaction (api/task/attemptService.ts temporalCallMs)
  const config = { ...stack.config, file: { ...stack.config.file, attempts: { ...stack.config.file.attempts, startTimeoutMs: BOUND_MS } } };
  app = await buildService('task', { db: apiPool, config, keys: stack.keys, temporal: proxied, logger, metrics });
  await app.ready();
  await (await proxied.client()).workflowService.getSystemInfo({}); // connected before Temporal holds its answers
}, 180_000);
afterAll(async () => {
  proxy?.setMode('forward');
  await app?.close();
  await proxied?.close();
  await proxy?.close();
  await apiPool?.end();
  await stack?.close();
});
afterEach(() => proxy.setMode('forward'));

interface Answer {
  status: number;
  body: { data?: Record<string, unknown>; error?: { code: string; message: string } };
}
async function call(method: 'POST' | 'DELETE', url: string, payload?: unknown, headers: Record<string, string> = {}): Promise<Answer> {
  const r = await app.inject({ method, url, payload: payload as object, headers: { 'x-api-key': TEST_API_KEY, 'x-user-email': 'carol@example.com', ...headers } });
  return { status: r.statusCode, body: r.json() as Answer['body'] };
}

/** The 503 of a Temporal call that got no answer within the bound: "try again", the bound named. */
function expectBoundRanOut(answer: Answer, message = /Temporal.*try again/): void {
  expect(answer.status).toBe(503);
  expect(answer.body.error?.code).toBe('SERVICE_UNAVAILABLE');
  expect(answer.body.error?.message).toMatch(message);
}

/** The API's sessions idle inside a transaction now (the worker's own short transactions are not its). */
const idleInTransaction = async () =>
  (
    await stack.db.query<{ query: string }>(
      "SELECT query FROM pg_stat_activity WHERE datname = current_database() AND application_name = $1 AND state LIKE 'idle in transaction%'",
      [API_SESSIONS],
    )
  ).rows;

/** The workflow `workflowId`'s result once it closes, read from Temporal directly. */
async function resultOf(workflowId: string): Promise<unknown> {
  const handle = (await stack.temporal.client()).workflow.getHandle(workflowId);
  await eventually(async () => (await handle.describe()).status.name !== 'RUNNING', 60_000, 250);
  return handle.result();
}

/** The workflows of `type` on the stack's queue started since `since`. */
async function runsSince(type: string, since: Date): Promise<string[]> {
  const ids: string[] = [];
  const query = `TaskQueue = '${stack.config.temporal.taskQueue}' AND WorkflowType = '${type}' AND StartTime >= '${since.toISOString()}'`;
  for await (const w of (await stack.temporal.client()).workflow.list({ query })) ids.push(w.workflowId);
  return ids;
}

test('a follow-up draft with autoSend whose start gets no answer: 503 within the bound, no draft row, nothing idle in transaction; its workflow sends nothing; sent again, one draft', async () => {
  const attemptId = await insertAttempt(stack, taskId);
  const body = { prompt: 'later, please', autoSend: true, sendAfter: new Date(Date.now() + 3_600_000).toISOString() };
  const since = new Date();
  proxy.setMode('holdAnswers');
  expectBoundRanOut(await call('POST', `/api/task-attempts/${attemptId}/follow-up-draft`, body), /did not answer within 2 s/);
  expect(await idleInTransaction()).toEqual([]);
  const drafts = async () => (await stack.db.query('SELECT id, status FROM follow_up_drafts WHERE task_attempt_id = $1', [attemptId])).rows;
  expect(await drafts()).toEqual([]);
  proxy.setMode('forward');
  // the start reached Temporal: its workflow found no row and ended without sending anything
  const [lost] = await eventually(async () => {
    const ids = await runsSince('followUpDraftWorkflow', since);
    return ids.length ? ids : undefined;
  }, 30_000, 200);
  expect(await resultOf(lost as string)).toBe('not-stored');

  const again = await call('POST', `/api/task-attempts/${attemptId}/follow-up-draft`, body);
  expect(again.status).toBe(201);
  expect(await drafts()).toEqual([{ id: again.body.data?.id, status: 'scheduled' }]);
});

test("a project whose clone start gets no answer: the documented 503 within the bound, no project row, nothing idle in transaction, nothing cloned; sent again, the project and its clone", async () => {
  const bare = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-bare-'));
  execFileSync('git', ['clone', '-q', '--bare', makeGitRepo({ 'README.md': '# cloned\n' }), bare]);
  const name = `clone-held-${Date.now()}`;
  const body = { name, repository: { url: `file://${bare}` } };
  const since = new Date();
  proxy.setMode('holdAnswers');
  expectBoundRanOut(await call('POST', '/api/projects', body), /^Temporal is unavailable: the repository cannot be cloned now; try again$/);
  expect(await idleInTransaction()).toEqual([]);
  const rows = async () => (await stack.db.query<{ clone_status: string; git_repo_path: string }>('SELECT clone_status, git_repo_path FROM projects WHERE name = $1', [name])).rows;
  expect(await rows()).toEqual([]);
  proxy.setMode('forward');
  const [lost] = await eventually(async () => {
    const ids = await runsSince('cloneProjectWorkflow', since);
    return ids.length ? ids : undefined;
  }, 30_000, 200);
  expect(await resultOf(lost as string)).toBe('gone'); // it cloned nothing

  expect((await call('POST', '/api/projects', body)).status).toBe(201);
  const [made] = await eventually(async () => {
    const r = await rows();
    return r[0]?.clone_status === 'ready' ? r : undefined;
  }, 60_000, 250);
  expect(fs.readFileSync(path.join(made?.git_repo_path as string, 'README.md'), 'utf8')).toBe('# cloned\n');
  fs.rmSync(bare, { recursive: true, force: true });
});

const { approvalsOf } = approvalOutcomes(() => stack);

/** A pending approval of a new attempt, made through the API while Temporal answers. */
async function attemptWithApproval(): Promise<{ attemptId: string; approvalId: string }> {
  const attemptId = await insertAttempt(stack, taskId);
  const made = await call('POST', '/api/approvals', { taskAttemptId: attemptId, type: 'merge', title: 'ship it', approvers: ['alice@example.com'] });
  expect(made.status).toBe(201);
  return { attemptId, approvalId: made.body.data?.id as string };
}
/** The approval's workflow was cancelled (CANCELLED), and its row closed once: one `approval.cancelled` event. */
async function cancelledOnce(approvalId: string): Promise<void> {
  const handle = (await stack.temporal.client()).workflow.getHandle(`approval:${approvalId}`);
  expect(await eventually(async () => {
    const status = (await handle.describe()).status.name;
    return status === 'RUNNING' ? undefined : status;
  }, 30_000, 200)).toBe('CANCELLED');
  const events = await stack.db.query("SELECT 1 FROM events WHERE type = 'approval.cancelled' AND data->>'approvalId' = $1", [approvalId]);
  expect(events.rowCount).toBe(1);
}
const attemptRows = async (id: string) => (await stack.db.query('SELECT id FROM attempts WHERE id = $1', [id])).rowCount;

test("deleting an attempt whose approvals' cancels get no answer: 503 within the bound, nothing deleted, nothing idle in transaction; deleted again, the approval's workflow cancelled once", async () => {
  const { attemptId, approvalId } = await attemptWithApproval();
  proxy.setMode('holdAnswers');
  expectBoundRanOut(await call('DELETE', `/api/attempts/${attemptId}`), /did not answer within 2 s/);
  expect(await idleInTransaction()).toEqual([]);
  expect(await attemptRows(attemptId)).toBe(1);
  // the held cancel may have reached the workflow (it then closes the row itself); a pending row is still pending
  const left = await approvalsOf(attemptId);
  expect(left.length).toBe(1);

  proxy.setMode('forward');
  const again = await call('DELETE', `/api/attempts/${attemptId}`);
  expect(again.status).toBe(200);
  expect(await attemptRows(attemptId)).toBe(0);
  await cancelledOnce(approvalId);
});

test('the cancels a delete makes with the rows locked get no answer: 503 within the bound, the transaction rolled back (rows kept, none locked, nothing idle); repeated, the rows go and the approval is cancelled', async () => {
  const { attemptId, approvalId } = await attemptWithApproval();
  const deps = { db: apiPool, temporal: proxied, metrics, config: stack.config };
  proxy.setMode('holdAnswers');
  const failed = await deleteWithApprovals(deps, { attemptIds: [attemptId] }, (c) => deleteAttemptRow(c, attemptId)).then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(failed).toBeInstanceOf(AppError);
  expect(failed).toMatchObject({ statusCode: 503, code: 'SERVICE_UNAVAILABLE', message: expect.stringMatching(/did not answer within 2 s/) });
  expect(await idleInTransaction()).toEqual([]);
  expect(await attemptRows(attemptId)).toBe(1);
  // the attempt's row is free: the transaction that locked it has ended
  const c = await stack.db.connect();
  try {
    await c.query('BEGIN');
    await c.query('SELECT 1 FROM attempts WHERE id = $1 FOR UPDATE NOWAIT', [attemptId]);
    await c.query('ROLLBACK');
  } finally {
    c.release();
  }

  proxy.setMode('forward');
  expect(await deleteWithApprovals(deps, { attemptIds: [attemptId] }, (c2) => deleteAttemptRow(c2, attemptId))).toBe(true);
  expect(await attemptRows(attemptId)).toBe(0);
  await cancelledOnce(approvalId);
});

/** `call`, and how long it took to answer. */
async function timedCall(method: 'POST' | 'DELETE', url: string, payload?: unknown, headers?: Record<string, string>): Promise<Answer & { ms: number }> {
  const began = Date.now();
  const answer = await call(method, url, payload, headers);
  return { ...answer, ms: Date.now() - began };
}
/** Well past the 2 s bound, well short of a wait without one (the held answer is never delivered meanwhile). */
const ANSWERED_WITHIN_MS = 15_000;
const attemptStatus = async (id: string) => (await stack.db.query<{ status: string }>('SELECT status FROM attempts WHERE id = $1', [id])).rows[0]?.status;

test('a follow-up queue with autoExecute whose "is the attempt running" gets no answer: 503 within the bound, no queue made; asked again, the 409 of an attempt without a running workflow', async () => {
  const attemptId = await insertAttempt(stack, taskId);
  const body = { queue: [{ prompt: 'next, please', order: 1 }], autoExecute: true };
  proxy.setMode('holdAnswers');
  const held = await timedCall('POST', `/api/task-attempts/${attemptId}/follow-up-queue`, body);
  expectBoundRanOut(held, /did not answer within 2 s/);
  expect(held.ms).toBeLessThan(ANSWERED_WITHIN_MS);
  const queues = async () => (await stack.db.query('SELECT id FROM follow_up_queues WHERE task_attempt_id = $1', [attemptId])).rowCount;
  expect(await queues()).toBe(0);

  proxy.setMode('forward');
  const again = await call('POST', `/api/task-attempts/${attemptId}/follow-up-queue`, body);
  expect(again.status).toBe(409); // no workflow runs for this attempt
  expect(await queues()).toBe(0);
});

test("a follow-up whose signal gets no answer: 503 within the bound saying it may or may not have been delivered and where to look (with an Idempotency-Key: to send it again with that key); sent again, the 409 of an attempt without a running workflow", async () => {
  const attemptId = await insertAttempt(stack, taskId);
  proxy.setMode('holdAnswers');
  const held = await timedCall('POST', `/api/attempts/${attemptId}/follow-up`, { prompt: 'and then this' });
  expect(held.status).toBe(503);
  expect(held.body.error).toMatchObject({
    code: 'SERVICE_UNAVAILABLE',
    message: expect.stringMatching(/did not answer within 2 s\): it may or may not have been delivered; check the attempt's processes \(GET \/api\/processes\?attemptId=/),
    details: { outcome: 'unknown' },
  });
  expect(held.ms).toBeLessThan(ANSWERED_WITHIN_MS);
  const keyed = await call('POST', `/api/attempts/${attemptId}/follow-up`, { prompt: 'and then this' }, { 'idempotency-key': 'then-this' });
  expect([keyed.status, keyed.body.error]).toEqual([
    503,
    {
      code: 'SERVICE_UNAVAILABLE',
      message: expect.stringMatching(/did not answer within 2 s\): it may or may not have been delivered; send it again with the same Idempotency-Key: the attempt runs a follow-up whose key it has already taken only once$/),
      details: { outcome: 'unknown' },
    },
  ]);

  proxy.setMode('forward');
  expect((await call('POST', `/api/attempts/${attemptId}/follow-up`, { prompt: 'and then this' })).status).toBe(409); // no workflow runs for it
});

const cancelOwed = async (id: string) =>
  (await stack.db.query<{ owed: Date | null }>('SELECT workflow_cancel_owed_since AS owed FROM attempts WHERE id = $1', [id])).rows[0]?.owed ?? null;

test("an attempt's cancel whose workflow cancel gets no answer: the 200 of the cancel within the bound, the attempt recorded cancelled, the workflow cancel owed and sent by the start reconciler's pass once Temporal answers", async () => {
  const attemptId = await insertAttempt(stack, taskId);
  // an open run under the attempt's workflow id, on a task queue no worker polls: it stays open as an idle run does
  const client = await stack.temporal.client();
  const run = await client.workflow.start('attemptWorkflow', { workflowId: attemptWorkflowId(attemptId), taskQueue: `no-worker-${attemptId}`, args: [] });
  proxy.setMode('holdAnswers');
  const held = await timedCall('POST', `/api/attempts/${attemptId}/cancel`);
  expect(held.status).toBe(200);
  expect(held.body.data?.status).toBe('cancelled');
  expect(held.ms).toBeLessThan(ANSWERED_WITHIN_MS);
  expect(await attemptStatus(attemptId)).toBe('cancelled');
  expect(await idleInTransaction()).toEqual([]);
  expect(await cancelOwed(attemptId)).not.toBeNull();

  proxy.setMode('forward');
  const deps = { db: stack.db, config: stack.config, temporal: stack.temporal, metrics };
  expect(await reconcileOwedCancels(deps, 0)).toBeGreaterThanOrEqual(1);
  expect(await cancelOwed(attemptId)).toBeNull();
  const history = await run.fetchHistory();
  expect(history.events?.filter((e) => e.workflowExecutionCancelRequestedEventAttributes)).toHaveLength(1);
  expect(await reconcileOwedCancels(deps, 0)).toBe(0); // sent once: nothing owed any more
  await run.terminate('test over');
});

test("a task's cancel whose workflow cancels get no answer: the 200 of the cancel within the bound, its attempt and the task recorded cancelled", async () => {
  const other = await createProjectAndTask(stack);
  const attemptId = await insertAttempt(stack, other.taskId);
  proxy.setMode('holdAnswers');
  const held = await timedCall('POST', `/api/tasks/${other.taskId}/cancel`);
  expect(held.status).toBe(200);
  expect(held.ms).toBeLessThan(ANSWERED_WITHIN_MS);
  expect(await attemptStatus(attemptId)).toBe('cancelled');
  expect(await cancelOwed(attemptId)).not.toBeNull(); // sent by the start reconciler's pass (the test above)
  expect((await stack.db.query<{ status: string }>('SELECT status FROM tasks WHERE id = $1', [other.taskId])).rows[0]?.status).toBe('cancelled');
});

test("deleting an attempt whose workflow cancel gets no answer: 503 within the bound, nothing deleted; deleted again once Temporal answers", async () => {
  const attemptId = await insertAttempt(stack, taskId);
  proxy.setMode('holdAnswers');
  const held = await timedCall('DELETE', `/api/attempts/${attemptId}`);
  expectBoundRanOut(held, /did not answer within 2 s/);
  expect(held.ms).toBeLessThan(ANSWERED_WITHIN_MS);
  expect(await attemptRows(attemptId)).toBe(1);

  proxy.setMode('forward');
  expect((await call('DELETE', `/api/attempts/${attemptId}`)).status).toBe(200);
  expect(await attemptRows(attemptId)).toBe(0);
});
