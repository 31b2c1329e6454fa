/**
 * An approval's response or cancel while no worker runs (docs/approvals.md#no-worker). Both are Temporal updates, and
 * only a worker applies an update: Temporal holds it until one polls, in memory only (it is lost when Temporal drops
 * the workflow's cached state). The route waits at most `approvals.workerWaitMs` (2 s here), then records the request
 * as a signal, which Temporal writes to the workflow's history, and answers 503 with `details.outcome: "recorded"`: the
 * worker applies it when it comes, whether Temporal kept the update or not. A repeat of the same request carries the
 * same update id and records nothing more, so it is applied at most once; once applied, a repeat is a 409. Real
 * Temporal; the worker is stopped and started.
 *
 * Before (found by the outside fuzzing of session 48): with the worker stopped, `POST /api/approvals/:id/respond` and
 * `/cancel` waited with no bound, for as long as no worker ran. Then (sessions 48-51) the 503 said that Temporal held
 * the update and might apply it: in ci51b a cancel so answered was not applied within 40 s of the worker's return.
 */
import type { RunningWorkers } from '../../workers/createWorker';
import { recordHistory } from '../support/attemptHelpers';
import { createProjectAndTask, insertAttempt } from '../support/attempts';
import { eventually, startStackWorkers, startTestStack, type TestStack } from '../support/harness';

jest.setTimeout(120_000);

const WAIT_MS = 2000;
const A = 'alice@example.com';
const B = 'bob@example.com';
const C = 'carol@example.com';

let stack: TestStack;
let taskId: string;
let workers: RunningWorkers | undefined;

const inject = (method: 'GET' | 'POST', url: string, user?: string, payload?: unknown) =>
  stack.app('task').inject({ method, url, payload: payload as object, headers: user ? { 'x-user-email': user } : {} });

beforeAll(async () => {
  stack = await startTestStack({ services: ['task'], worker: true, file: { approvals: { workerWaitMs: WAIT_MS } } });
  workers = stack.workers;
  ({ taskId } = await createProjectAndTask(stack));
}, 120_000);
afterAll(async () => {
  if (workers !== stack?.workers) await workers?.stop();
  await stack?.close();
});

async function createApproval(approvers: string[]): Promise<string> {
  const attemptId = await insertAttempt(stack, taskId);
  const r = await inject('POST', '/api/approvals', C, { taskAttemptId: attemptId, type: 'merge', title: 'Merge it?', approvers });
  expect(r.statusCode).toBe(201);
  const id = r.json().data.id as string;
  // its first activity has run (the row is the workflow's too), so stopping the worker now leaves only the updates to it
  const handle = (await stack.temporal.client()).workflow.getHandle(`approval:${id}`);
  await eventually(async () => (await handle.fetchHistory()).events?.some((e) => e.activityTaskCompletedEventAttributes), 15_000, 200);
  return id;
}

const detail = async (id: string) => (await inject('GET', `/api/approvals/${id}`)).json().data as { status: string; responses: { approver: string; decision: string }[] };
const eventsOf = async (id: string) =>
  (await stack.db.query<{ type: string }>("SELECT type FROM events WHERE data->>'approvalId' = $1 ORDER BY seq", [id])).rows.map((r) => r.type);

/** The signals in the approval workflow's history, as [name, input]: what Temporal has recorded, with or without a worker. */
async function signalsOf(id: string): Promise<[string, unknown][]> {
  const { events } = await (await stack.temporal.client()).workflow.getHandle(`approval:${id}`).fetchHistory();
  return (events ?? []).flatMap((e) => {
    const a = e.workflowExecutionSignaledEventAttributes;
    if (!a) return [];
    const data = a.input?.payloads?.[0]?.data;
    return [[a.signalName ?? '', data ? JSON.parse(Buffer.from(data).toString('utf8')) : undefined] as [string, unknown]];
  });
}

const noWorker = (what: 'response' | 'cancel', id: string) => ({
  success: false,
  error: {
    code: 'SERVICE_UNAVAILABLE',
    message: expect.stringMatching(new RegExp(`^No worker applied this ${what} to approval ${id} within 2 s .*: it is recorded, and a worker applies it when one comes`)),
    details: { outcome: 'recorded', waitedMs: WAIT_MS },
  },
  meta: expect.any(Object),
});

test('respond with the worker stopped: 503, recorded once, repeats too; applied once when the worker comes; a repeat then is the same 409 whether or not it decided', async () => {
  const single = await createApproval([A]);
  const pair = await createApproval([A, B]);
  await workers?.stop();
  workers = undefined;

  const answer = { decision: 'approved', comment: 'ship it' };
  // the first request and a repeat sent while it waits, then another repeat: each answered within the wait, none applied yet
  const [first, concurrent] = await Promise.all([inject('POST', `/api/approvals/${single}/respond`, A, answer), inject('POST', `/api/approvals/${single}/respond`, A, answer)]);
  const again = await inject('POST', `/api/approvals/${single}/respond`, A, answer);
  for (const r of [first, concurrent, again]) {
    expect([r.statusCode, r.headers['retry-after'], r.json()]).toEqual([503, '1', noWorker('response', single)]);
  }
  const ofPair = await inject('POST', `/api/approvals/${pair}/respond`, A, answer);
  expect([ofPair.statusCode, ofPair.json()]).toEqual([503, noWorker('response', pair)]);
  expect(await detail(single)).toMatchObject({ status: 'pending', responses: [] });
  // recorded in the workflow's history before any worker runs, once for the three requests: nothing here depends on
  // Temporal keeping the held update until the worker comes
  const recorded = ['respondRecorded', { user: A, ...answer }];
  expect([await signalsOf(single), await signalsOf(pair)]).toEqual([[recorded], [recorded]]);

  workers = await startStackWorkers(stack);
  // what the 503s said happens does: the recorded response is applied, once
  await eventually(async () => (await detail(single)).status === 'approved', 40_000, 250);
  await eventually(async () => (await detail(pair)).responses.length === 1, 40_000, 250);
  expect(await detail(single)).toMatchObject({ status: 'approved', responses: [{ approver: A, decision: 'approved' }] });
  expect(await detail(pair)).toMatchObject({ status: 'pending', responses: [{ approver: A, decision: 'approved' }] });
  expect(await eventsOf(single)).toEqual(['approval.created', 'approval.approved']);

  // a repeat now: the same 409 for the response that decided its request and for the one that did not
  for (const id of [single, pair, single]) {
    const r = await inject('POST', `/api/approvals/${id}/respond`, A, answer);
    expect([r.statusCode, r.json().error]).toEqual([409, { code: 'CONFLICT', message: `${A} has already responded to approval ${id}` }]);
  }
  const other = await inject('POST', `/api/approvals/${single}/respond`, A, { decision: 'rejected' });
  expect([other.statusCode, other.json().error.message]).toEqual([409, `${A} has already responded to approval ${single}`]);
  // the other approver decides the pair as usual
  const b = await inject('POST', `/api/approvals/${pair}/respond`, B, answer);
  expect([b.statusCode, b.json().data]).toEqual([200, expect.objectContaining({ approvalId: pair, decision: 'approved', approvalStatus: 'approved' })]);
  expect(await detail(single)).toMatchObject({ status: 'approved', responses: [{ approver: A }] });
  expect(await eventsOf(single)).toEqual(['approval.created', 'approval.approved']);
  // the workflow ends with the recorded response applied (a replay fixture with ARMADA_RECORD_HISTORIES)
  expect(await (await stack.temporal.client()).workflow.getHandle(`approval:${single}`).result()).toBe('approved');
  await recordHistory(stack, `approval:${single}`, 'approval-approved-recorded-no-worker');
});

test('cancel with the worker stopped: 503, recorded once; cancelled once when the worker comes; a repeat then is a 409', async () => {
  const id = await createApproval([A]);
  await workers?.stop();
  workers = undefined;

  const [cancel, repeat] = await Promise.all([inject('POST', `/api/approvals/${id}/cancel`, C), inject('POST', `/api/approvals/${id}/cancel`, C)]);
  for (const r of [cancel, repeat]) expect([r.statusCode, r.headers['retry-after'], r.json()]).toEqual([503, '1', noWorker('cancel', id)]);
  expect((await detail(id)).status).toBe('pending');
  expect(await signalsOf(id)).toEqual([['cancelRecorded', { user: C }]]);

  workers = await startStackWorkers(stack);
  await eventually(async () => (await detail(id)).status === 'cancelled', 40_000, 250);
  expect(await detail(id)).toMatchObject({ status: 'cancelled', responses: [] });
  expect(await eventsOf(id)).toEqual(['approval.created', 'approval.cancelled']);
  for (let i = 0; i < 2; i++) {
    const r = await inject('POST', `/api/approvals/${id}/cancel`, C);
    expect([r.statusCode, r.json().error]).toEqual([409, { code: 'CONFLICT', message: `Approval ${id} is cancelled, no longer pending` }]);
  }
  const late = await inject('POST', `/api/approvals/${id}/respond`, A, { decision: 'approved' });
  expect([late.statusCode, late.json().error.message]).toEqual([409, `Approval ${id} is cancelled, no longer pending`]);
  expect(await (await stack.temporal.client()).workflow.getHandle(`approval:${id}`).result()).toBe('cancelled');
  await recordHistory(stack, `approval:${id}`, 'approval-cancelled-recorded-no-worker');
});
