/**
 * POST /api/approvals starts the request's `approvalWorkflow` inside the transaction that inserts its row; the
 * workflow's first activity waits for that transaction's end and ends `not-stored` when the row did not commit
 * (docs/approvals.md, "Create"). Here the start's own answer is what fails, between `armada api` and Temporal (a TCP
 * proxy in front of the run's Temporal dev server; the worker reaches Temporal directly):
 * - the start reached Temporal and its answer was lost (the connection cut after the request was forwarded, with the
 *   answer held back): the workflow runs, but the API answered 503 and rolled its transaction back, so the outcome is
 *   known — nothing stored — and "try again" is the truth: the workflow ends `not-stored`, no row, no event, and the
 *   request sent again makes one approval, not two;
 * - the start never reached Temporal (connections refused before anything was sent): 503 "try again", no workflow,
 *   no row; sent again once Temporal answers, one approval.
 * - the start reached Temporal and its answer is held past the start's bound (ARMADA_API_TEMPORAL_IN_TRANSACTION_TIMEOUT_MS,
 *   2 s here): 503 "try again" naming the bound, the transaction rolled back (no session of the API idle in transaction),
 *   nothing stored, the workflow ends `not-stored`; sent again once Temporal answers, one approval. Before, the start
 *   waited without a limit inside the transaction (until Temporal was called down by the probes, or PostgreSQL's
 *   idle_in_transaction_session_timeout ended the session).
 * None of these 503 names an approval (`details.approvalId` is only for a COMMIT whose outcome is unknown:
 * approvalCommitFaults.test.ts).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnApi, type ApiProcess } from '../support/apiProcess';
import { approvalOutcomes } from '../support/approvalOutcomes';
import { createProjectAndTask, insertAttempt } from '../support/attempts';
import { env, eventually, startTestStack, TEST_API_KEY, type TestStack } from '../support/harness';
import { startTcpProxy, type TcpProxy } from '../support/tcpProxy';

jest.setTimeout(180_000);

let stack: TestStack;
let taskId: string;
let proxy: TcpProxy;
let api: ApiProcess;
const apiHome = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-approval-start-'));

const REQUESTER = 'carol@example.com';
const API_SESSIONS = 'approval-start-faults-api';
const APPROVER = 'alice@example.com';

beforeAll(async () => {
  stack = await startTestStack({ services: ['task'], worker: true });
  ({ taskId } = await createProjectAndTask(stack));
  proxy = await startTcpProxy(env('ARMADA_TEST_TEMPORAL_ADDRESS'));
  api = await spawnApi({
    home: apiHome,
    databaseUrl: stack.dbUrl,
    temporalAddress: proxy.address,
    services: ['task'],
    env: { ARMADA_TASK_QUEUE: stack.config.temporal.taskQueue, ARMADA_API_TEMPORAL_IN_TRANSACTION_TIMEOUT_MS: '2000', PGAPPNAME: API_SESSIONS },
  });
}, 240_000);
afterAll(async () => {
  await api?.stop();
  await proxy?.close();
  await stack?.close();
  fs.rmSync(apiHome, { recursive: true, force: true });
});

interface Answer {
  status: number;
  body: { data?: { id: string }; error?: { code: string; message: string; details?: Record<string, unknown> } };
}
const create = async (attemptId: string, title: string): Promise<Answer> => {
  const r = await fetch(`${api.base('task')}/api/approvals`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': TEST_API_KEY, 'x-user-email': REQUESTER },
    body: JSON.stringify({ taskAttemptId: attemptId, type: 'merge', title, approvers: [APPROVER] }),
  });
  return { status: r.status, body: (await r.json()) as Answer['body'] };
};

/** The approval workflows of the stack's queue started since `since`, read from Temporal directly. */
async function approvalRunsSince(since: Date): Promise<{ workflowId: string; status: string }[]> {
  const client = await stack.temporal.client();
  const runs: { workflowId: string; status: string }[] = [];
  const query = `TaskQueue = '${stack.config.temporal.taskQueue}' AND WorkflowType = 'approvalWorkflow' AND StartTime >= '${since.toISOString()}'`;
  for await (const w of client.workflow.list({ query })) runs.push({ workflowId: w.workflowId, status: w.status.name });
  return runs;
}

const { resultOf, approvalsOf, eventsOf } = approvalOutcomes(() => stack);

/** Temporal reachable through the proxy again, and the API knows it (its /health answers 200). */
async function temporalBack(): Promise<void> {
  proxy.setMode('forward');
  await eventually(async () => (await fetch(`${api.base('task')}/health`)).status === 200, 60_000, 250);
}

/** The 503 of a start that failed on the way to Temporal: "try again", no approval named. */
function expectTryAgain(answer: Answer): void {
  expect(answer.status).toBe(503);
  expect(answer.body.error).toMatchObject({ code: 'SERVICE_UNAVAILABLE', message: expect.stringMatching(/Temporal.*try again/) });
  expect(answer.body.error?.details?.approvalId).toBeUndefined();
  expect(answer.body.error?.details?.outcome).toBeUndefined();
}

/** Sent again, as the 503 said: one approval, pending, that takes its approver's answer. */
async function sentAgainMakesOne(attemptId: string, title: string): Promise<void> {
  const again = await create(attemptId, title);
  expect(again.status).toBe(201);
  const id = again.body.data?.id as string;
  expect(await approvalsOf(attemptId)).toEqual([{ id, status: 'pending' }]);
  expect(await eventsOf(id)).toBe(1); // approval.created
  const respond = await fetch(`${api.base('task')}/api/approvals/${id}/respond`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': TEST_API_KEY, 'x-user-email': APPROVER },
    body: JSON.stringify({ decision: 'approved' }),
  });
  expect(respond.status).toBe(200);
  expect(await resultOf(id)).toBe('approved');
  expect(await approvalsOf(attemptId)).toEqual([{ id, status: 'approved' }]);
}

test('the start reached Temporal and its answer was lost (connection cut after the request): 503 try again, the workflow ends not-stored, nothing stored; sent again, one approval', async () => {
  // the API's connection to Temporal is up and has answered (a create through it, then its response)
  await sentAgainMakesOne(await insertAttempt(stack, taskId), 'warm-up');
  const attemptId = await insertAttempt(stack, taskId);
  const since = new Date();
  proxy.setMode('holdAnswers'); // requests reach Temporal; what it answers is held back
  const answer = create(attemptId, 'its start answer is lost');
  // the start reached Temporal: its workflow runs (waiting for the API's transaction to end)
  const run = await eventually(async () => (await approvalRunsSince(since))[0], 30_000, 200);
  const id = run.workflowId.replace(/^approval:/, '');
  proxy.setMode('refuse'); // the connection is cut with the answer undelivered, and the tries after it are refused
  const r = await answer;
  // the transaction rolled back after the failed start: nothing was stored, and "try again" is the truth
  expectTryAgain(r);
  expect(await resultOf(id)).toBe('not-stored');
  expect(await approvalsOf(attemptId)).toEqual([]);
  expect(await eventsOf(id)).toBe(0);
  const get = await fetch(`${api.base('task')}/api/approvals/${id}`, { headers: { 'x-api-key': TEST_API_KEY } });
  expect(get.status).toBe(404);

  await temporalBack();
  await sentAgainMakesOne(attemptId, 'its start answer is lost');
  // two workflows ran for this attempt's requests: the lost one ended not-stored, the second approved; none runs on
  await eventually(async () => {
    const runs = await approvalRunsSince(since);
    return runs.length === 2 && runs.every((w) => w.status === 'COMPLETED');
  }, 30_000, 250);
});

test('the start never reached Temporal (connection refused before anything was sent): 503 try again, no workflow, nothing stored; sent again, one approval', async () => {
  const attemptId = await insertAttempt(stack, taskId);
  const since = new Date();
  proxy.setMode('refuse');
  expectTryAgain(await create(attemptId, 'refused'));
  expect(await approvalsOf(attemptId)).toEqual([]);
  expect(await approvalRunsSince(since)).toEqual([]);

  await temporalBack();
  await sentAgainMakesOne(attemptId, 'refused');
  // one workflow ran: the approved one's
  await eventually(async () => {
    const runs = await approvalRunsSince(since);
    return runs.length === 1 && runs[0]?.status === 'COMPLETED';
  }, 30_000, 250);
  expect(await approvalRunsSince(since)).toHaveLength(1);
});

test("the start's answer held past its bound: 503 try again naming it, no session idle in transaction, nothing stored, the workflow ends not-stored; sent again, one approval", async () => {
  const attemptId = await insertAttempt(stack, taskId);
  const since = new Date();
  proxy.setMode('holdAnswers'); // requests reach Temporal; what it answers is held back
  const r = await create(attemptId, 'held past the bound');
  expectTryAgain(r);
  // the bound names itself; but the proxy holds the answers to the API's own Temporal probe too (every 1 s, 1.5 s
  // deadline), and when those call Temporal down within the 2 s, the API reconnects and the start ends at once as
  // "unavailable" (ci51b, ci53b): the same 503 "try again", and what follows must hold either way
  expect(r.body.error?.message).toMatch(/did not answer within 2 s|The workflow engine \(Temporal\) is unavailable; try again/);
  const idle = await stack.db.query("SELECT query FROM pg_stat_activity WHERE application_name = $1 AND state LIKE 'idle in transaction%'", [API_SESSIONS]);
  expect(idle.rows).toEqual([]);
  expect(await approvalsOf(attemptId)).toEqual([]);
  await temporalBack();
  const run = await eventually(async () => (await approvalRunsSince(since))[0], 30_000, 200);
  expect(await resultOf(run.workflowId.replace(/^approval:/, ''))).toBe('not-stored');
  await sentAgainMakesOne(attemptId, 'held past the bound');
});
