/**
 * attemptWorkflow continues-as-new (here after every 2 follow-ups: attempts.continueAsNewEvery) without losing a
 * message: follow-ups queued around the switch all run, in order, and a close received before it ends the next run.
 * The follow-up keys it has taken (Idempotency-Key) go along: a repeat is dropped in either run. A key sent again with
 * another body is a 422 that sends nothing (the key is bound to its first body in PostgreSQL).
 */
import { defaultPayloadConverter } from '@temporalio/common';
import { ArmadaAttemptStatus, ArmadaProjectId, ArmadaTaskId } from '../../lib/temporal/searchAttributes';
import { closeAttemptSignal } from '../../workflows/attemptMessages';
import { agentConfig, api, recordHistory } from '../support/attemptHelpers';
import { eventually, startTestStack, type TestStack } from '../support/harness';

let stack: TestStack;
let h: ReturnType<typeof api>;

beforeAll(async () => {
  stack = await startTestStack({ services: ['task'], worker: true, file: agentConfig({ attempts: { heartbeatTimeoutMs: 5000, killGraceMs: 1000, continueAsNewEvery: 2 } }) });
  h = api(stack);
});
afterAll(async () => {
  await stack.close();
});

interface Proc {
  id: string;
  kind: string;
  status: string;
  prompt?: string;
}

const processes = async (attemptId: string): Promise<Proc[]> => {
  const { rows } = await stack.db.query<Proc>('SELECT id, kind, status, prompt FROM processes WHERE attempt_id = $1 ORDER BY created_at, id', [attemptId]);
  return rows;
};

test('follow-ups sent around continue-as-new all run, in order; a close received before it closes the next run', async () => {
  const p = await h.project();
  const taskId = await h.task(p.id, 'NOOP start');
  const { attemptId } = await h.start(taskId);
  await h.until(attemptId, ['completed']);
  const client = await stack.temporal.client();
  const handle = client.workflow.getHandle(`attempt:${attemptId}`);
  const firstRunId = (await handle.describe()).runId;

  // five at once: the run continues-as-new after the 2nd and the 4th with the rest still queued
  const prompts = ['FOLLOWUP 1', 'FOLLOWUP 2', 'FOLLOWUP 3', 'FOLLOWUP 4', 'FOLLOWUP 5'];
  for (const prompt of prompts) expect((await h.inject('POST', `/api/attempts/${attemptId}/follow-up`, { prompt })).statusCode).toBe(202);
  await eventually(async () => {
    const list = await processes(attemptId);
    return list.length === 6 && list.every((x) => x.status === 'completed');
  }, 60_000, 200);
  expect((await processes(attemptId)).filter((x) => x.kind === 'follow_up').map((x) => x.prompt)).toEqual(prompts);
  const notes = (await h.inject('GET', `/api/attempts/${attemptId}/diff?format=json&file=notes.txt`)).json().data;
  expect(notes.files[0].changes.map((c: { content: string }) => c.content)).toEqual(prompts);
  expect((await handle.describe()).runId).not.toBe(firstRunId);
  // the continued run keeps the search attributes of the first one (ArmadaProjectId is set only at the start); its
  // status follows the last follow-up's outcome, upserted just after that outcome is recorded
  const attrs = await eventually(async () => {
    const a = (await handle.describe()).typedSearchAttributes;
    return a.get(ArmadaAttemptStatus) === 'completed' ? a : undefined;
  });
  expect([attrs.get(ArmadaTaskId), attrs.get(ArmadaProjectId)]).toEqual([taskId, p.id]);

  // the 6th follow-up is the run's 2nd: close arrives while it runs, so the run continues-as-new holding the close
  expect((await h.inject('POST', `/api/attempts/${attemptId}/follow-up`, { prompt: 'SLOWEDIT 6' })).statusCode).toBe(202);
  await eventually(async () => (await processes(attemptId)).some((x) => x.prompt === 'SLOWEDIT 6' && x.status === 'running'), 30_000, 100);
  const runBeforeClose = (await handle.describe()).runId;
  await handle.signal(closeAttemptSignal);
  await eventually(async () => (await processes(attemptId)).find((x) => x.prompt === 'SLOWEDIT 6')?.status === 'completed', 30_000, 200);
  // the next run starts with the close and ends at once (it would otherwise wait attempts.idleTimeoutMs, 24 h)
  const closed = await eventually(async () => {
    const d = await handle.describe();
    return d.status.name === 'COMPLETED' ? d : undefined;
  }, 30_000, 200);
  expect(closed.runId).not.toBe(runBeforeClose);
  await recordHistory(stack, `attempt:${attemptId}`, 'attempt-continue-as-new', firstRunId);
  await recordHistory(stack, `attempt:${attemptId}`, 'attempt-continue-as-new-closing', runBeforeClose);
}, 120_000);

test('a follow-up sent again with its Idempotency-Key runs once (one after the other, two at once, again after continue-as-new); a new key runs; the key with another body is a 422 that sends nothing; a key over 200 characters or on two lines is a 400', async () => {
  const p = await h.project();
  const { attemptId } = await h.start(await h.task(p.id, 'NOOP start'));
  await h.until(attemptId, ['completed']);
  const handle = (await stack.temporal.client()).workflow.getHandle(`attempt:${attemptId}`);
  const firstRunId = (await handle.describe()).runId;
  const followUp = async (prompt: string, key?: string | string[]) => {
    const r = await h.inject('POST', `/api/attempts/${attemptId}/follow-up`, { prompt }, key === undefined ? undefined : ({ 'idempotency-key': key } as Record<string, string>));
    return { status: r.statusCode, body: r.json() };
  };
  // a repeat answers as the first did: the client cannot tell them apart
  const accepted = { status: 202, body: { success: true, data: { attemptId, queued: true }, meta: expect.any(Object) } };
  const viaApi = async () => {
    const r = await h.inject('GET', `/api/processes?attemptId=${attemptId}&limit=100`);
    return (r.json().data as { kind: string; status: string }[]).map((x) => ({ kind: x.kind, status: x.status }));
  };
  const ran = async (followUps: number) => {
    const list = await viaApi();
    return list.length === followUps + 1 && list.every((x) => x.status === 'completed') ? list : undefined;
  };

  const keyA = `a-${attemptId}`;
  const keyB = `b-${attemptId}`;
  expect(await followUp('FOLLOWUP A', keyA)).toEqual(accepted);
  expect(await followUp('FOLLOWUP A', keyA)).toEqual(accepted);
  expect(await Promise.all([followUp('FOLLOWUP B', keyB), followUp('FOLLOWUP B', keyB)])).toEqual([accepted, accepted]);
  // A and B are the run's two follow-ups (continueAsNewEvery 2): it continues-as-new after B, taking the keys along
  await eventually(() => ran(2), 60_000, 200);
  const secondRunId = await eventually(async () => {
    const runId = (await handle.describe()).runId;
    return runId !== firstRunId ? runId : undefined;
  }, 30_000, 100);

  const tooLong = await followUp('FOLLOWUP X', 'k'.repeat(201));
  expect(tooLong).toEqual({
    status: 400,
    body: {
      success: false,
      error: { code: 'VALIDATION_ERROR', message: 'Request headers are invalid: idempotency-key must NOT have more than 200 characters', details: { 'idempotency-key': 'must NOT have more than 200 characters' } },
      meta: expect.any(Object),
    },
  });
  const twice = await followUp('FOLLOWUP X', [keyA, `x-${attemptId}`]);
  expect([twice.status, twice.body.error]).toEqual([400, { code: 'VALIDATION_ERROR', message: 'Request headers are invalid: idempotency-key must be sent once', details: { 'idempotency-key': 'must be sent once' } }]);

  // A's key with another body (the attempt idle): a 422, and nothing changes: no process, the keys still bound to
  // their first bodies; the run's history below shows it was not signalled either
  const rows = async () => ({
    processes: await processes(attemptId),
    keys: (await stack.db.query('SELECT scope, key, request_hash FROM attempt_idempotency_keys WHERE attempt_id = $1 ORDER BY key', [attemptId])).rows,
  });
  const before = await rows();
  expect(before.keys.map((k) => [k.scope, k.key])).toEqual([
    [`follow-up:${attemptId}`, keyA],
    [`follow-up:${attemptId}`, keyB],
  ]);
  expect(await followUp('FOLLOWUP A, CHANGED', keyA)).toEqual({
    status: 422,
    body: {
      success: false,
      error: {
        code: 'IDEMPOTENCY_KEY_REUSED',
        message: `The Idempotency-Key was sent before with another body (a follow-up to attempt ${attemptId}): a key names one request, so this one was not run. Send it with a new key to queue another follow-up; a retry of the first request must send the same body.`,
        details: { 'idempotency-key': 'was sent before with another body' },
      },
      meta: expect.any(Object),
    },
  });
  expect(await rows()).toEqual(before);

  // A's key again, in the continued run: dropped; then a new key, and A's prompt with a key of 200 characters: both run
  // (follow-ups run in order, so a repeat that ran would have run before C)
  expect(await followUp('FOLLOWUP A', keyA)).toEqual(accepted);
  expect(await followUp('FOLLOWUP C', `c-${attemptId}`)).toEqual(accepted);
  expect(await followUp('FOLLOWUP A', 'k'.repeat(200))).toEqual(accepted);
  const list = await eventually(() => ran(4), 60_000, 200);
  expect(list.map((x) => x.kind).sort()).toEqual(['follow_up', 'follow_up', 'follow_up', 'follow_up', 'initial']);
  const notes = (await h.inject('GET', `/api/attempts/${attemptId}/diff?format=json&file=notes.txt`)).json().data;
  expect(notes.files[0].changes.map((c: { content: string }) => c.content)).toEqual(['FOLLOWUP A', 'FOLLOWUP B', 'FOLLOWUP C', 'FOLLOWUP A']);
  // the continued run was signalled A's repeat (same body: sent, and dropped by the workflow), C and the 200-character
  // key's, not the 422's body
  const secondRun = (await stack.temporal.client()).workflow.getHandle(`attempt:${attemptId}`, secondRunId);
  const signalled = ((await secondRun.fetchHistory()).events ?? [])
    .map((e) => e.workflowExecutionSignaledEventAttributes)
    .filter((a) => a?.signalName === 'followUp')
    .map((a) => defaultPayloadConverter.fromPayload<{ prompt: string }>(a?.input?.payloads?.[0] ?? {}).prompt);
  expect(signalled).toEqual(['FOLLOWUP A', 'FOLLOWUP C', 'FOLLOWUP A']);
  await recordHistory(stack, `attempt:${attemptId}`, 'attempt-follow-up-key-repeated', firstRunId);
  await recordHistory(stack, `attempt:${attemptId}`, 'attempt-follow-up-key-carried', secondRunId);
}, 120_000);
