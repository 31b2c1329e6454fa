import crypto from 'node:crypto';
import path from 'node:path';
import { NativeConnection, Worker } from '@temporalio/worker';
import WebSocket from 'ws';
import { createProjectAndTask, insertAttempt } from '../support/attempts';
import { attemptStandInWorkflow, finishSignal, followUpsQuery, type ReceivedFollowUp } from '../support/attemptStandInWorkflow';
import { env, eventually, startTestStack, ensureTemporalRuntime, type TestStack } from '../support/harness';

let stack: TestStack;
let projectId: string;
let taskId: string;
let standInWorker: Worker;
let standInConnection: NativeConnection;
let standInRun: Promise<void>;
const standInQueue = `attempt-standin-${crypto.randomBytes(4).toString('hex')}`;

const inject = (method: 'GET' | 'POST' | 'DELETE', url: string, payload?: unknown) => stack.app('task').inject({ method, url, payload: payload as object });

/** An attempt row plus a running stand-in `attempt:<id>` workflow that records the follow-ups it is sent. */
async function attemptWithWorkflow() {
  const attemptId = await insertAttempt(stack, taskId);
  const client = await stack.temporal.client();
  const handle = await client.workflow.start(attemptStandInWorkflow, { workflowId: `attempt:${attemptId}`, taskQueue: standInQueue });
  return { attemptId, followUps: async () => handle.query(followUpsQuery), finish: () => handle.signal(finishSignal) };
}

beforeAll(async () => {
  stack = await startTestStack({ services: ['task'], worker: true });
  ({ projectId, taskId } = await createProjectAndTask(stack));
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
  standInWorker?.shutdown();
  await standInRun;
  await standInConnection?.close();
  await stack.close();
});

describe('follow-ups sent to the attempt workflow', () => {
  test('a follow-up draft with autoSend and sendAfter 2 s ahead is signalled at that time, then marked sent', async () => {
    const a = await attemptWithWorkflow();
    const sendAfter = new Date(Date.now() + 2000).toISOString();
    const r = await inject('POST', `/api/task-attempts/${a.attemptId}/follow-up-draft`, { prompt: 'Now add tests', autoSend: true, sendAfter });
    expect(r.statusCode).toBe(201);
    const draft = r.json().data;
    expect(draft).toMatchObject({ taskAttemptId: a.attemptId, prompt: 'Now add tests', autoSend: true, sendAfter, status: 'scheduled' });
    await new Promise((res) => setTimeout(res, 1000));
    expect(await a.followUps()).toEqual([]);
    const got = await eventually(async () => {
      const f = await a.followUps();
      return f.length ? f : undefined;
    }, 15_000, 100);
    expect(got).toEqual([expect.objectContaining({ prompt: 'Now add tests', draftId: draft.id, source: 'follow-up-draft' })]);
    expect((got[0] as ReceivedFollowUp).receivedAt).toBeGreaterThanOrEqual(Date.parse(sendAfter));
    await eventually(async () => (await stack.db.query("SELECT 1 FROM follow_up_drafts WHERE id = $1 AND status = 'sent' AND sent_at IS NOT NULL", [draft.id])).rowCount);
    await a.finish();
  });

  test('a follow-up queue of three prompts with autoExecute is sent in order', async () => {
    const a = await attemptWithWorkflow();
    const r = await inject('POST', `/api/task-attempts/${a.attemptId}/follow-up-queue`, {
      autoExecute: true,
      queue: [
        { prompt: 'third', order: 3 },
        { prompt: 'first', order: 1 },
        { prompt: 'second', order: 2 },
      ],
    });
    expect(r.statusCode).toBe(201);
    const q = r.json().data;
    expect(q).toMatchObject({ taskAttemptId: a.attemptId, autoExecute: true });
    expect(q.queue.map((i: { prompt: string; order: number; status: string }) => [i.prompt, i.order, i.status])).toEqual([
      ['first', 1, 'pending'],
      ['second', 2, 'pending'],
      ['third', 3, 'pending'],
    ]);
    const got = await eventually(async () => {
      const f = await a.followUps();
      return f.length === 3 ? f : undefined;
    });
    expect(got.map((f) => [f.prompt, f.source])).toEqual([
      ['first', 'follow-up-queue'],
      ['second', 'follow-up-queue'],
      ['third', 'follow-up-queue'],
    ]);
    await eventually(async () => (await stack.db.query("SELECT count(*)::int AS n FROM follow_up_queue_items WHERE queue_id = $1 AND status = 'sent'", [q.id])).rows[0].n === 3);
    await a.finish();
  });

  test('without autoSend / autoExecute nothing is sent; an attempt without a workflow gets a failed draft', async () => {
    const a = await attemptWithWorkflow();
    const d = await inject('POST', `/api/task-attempts/${a.attemptId}/follow-up-draft`, { prompt: 'later' });
    expect(d.json().data).toMatchObject({ autoSend: false, sendAfter: null, status: 'draft' });
    const q = await inject('POST', `/api/task-attempts/${a.attemptId}/follow-up-queue`, { queue: [{ prompt: 'x', order: 0 }] });
    expect(q.json().data.autoExecute).toBe(false);
    await new Promise((res) => setTimeout(res, 1000));
    expect(await a.followUps()).toEqual([]);
    await a.finish();

    const orphan = await insertAttempt(stack, taskId);
    const f = await inject('POST', `/api/task-attempts/${orphan}/follow-up-draft`, { prompt: 'nobody listens', autoSend: true });
    expect(f.json().data.status).toBe('scheduled');
    await eventually(async () => (await stack.db.query("SELECT 1 FROM follow_up_drafts WHERE id = $1 AND status = 'failed'", [f.json().data.id])).rowCount);
  });

  test('a follow-up, or a queue with autoExecute, to an attempt whose workflow is not running is a 409 saying why and what to do, and makes nothing', async () => {
    const again = 'start a new attempt of its task to go on';
    const ended = await attemptWithWorkflow();
    await ended.finish();
    const client = await stack.temporal.client();
    await client.workflow.getHandle(`attempt:${ended.attemptId}`).result();
    const endedRunning = await insertAttempt(stack, taskId); // recorded running, its workflow never started
    await stack.db.query("UPDATE attempts SET status = 'completed', completed_at = now() WHERE id = $1", [ended.attemptId]);
    const created = await insertAttempt(stack, taskId, 'created');
    const starting = await insertAttempt(stack, taskId);
    await stack.db.query('UPDATE attempts SET start_pending_since = now() WHERE id = $1', [starting]);
    const cancelled = await insertAttempt(stack, taskId, 'cancelled');
    const merged = await insertAttempt(stack, taskId, 'completed');
    await stack.db.query('UPDATE attempts SET merged_at = now(), completed_at = now() WHERE id = $1', [merged]);
    const cases: Array<[string, string, string]> = [
      [created, 'created', `has not started yet, so it takes no follow-ups: start it first (POST /api/attempts/${created}/start), then send the follow-up`],
      [starting, 'running', 'is still starting (its workflow has not started yet), so it takes no follow-ups yet: send the follow-up again in a few seconds'],
      [endedRunning, 'running', `is recorded running, but its workflow is not running (it ended in Temporal, or never started there), so it takes no follow-ups: ${again}`],
      [cancelled, 'cancelled', `was cancelled, so it takes no follow-ups: ${again}`],
      [merged, 'completed', `has been merged and its workflow has ended, so it takes no follow-ups: ${again}`],
      [ended.attemptId, 'completed', `has finished (completed) and its workflow has ended (idle for attempts.idleTimeoutMs, or ended in Temporal), so it takes no more follow-ups: ${again}`],
    ];
    try {
      for (const [attemptId, status, why] of cases) {
        const refused = { success: false, error: { code: 'CONFLICT', message: `Attempt ${attemptId} ${why}`, details: { status } } };
        const f = await inject('POST', `/api/attempts/${attemptId}/follow-up`, { prompt: 'x' });
        expect({ attemptId, status: f.statusCode, body: f.json() }).toEqual({ attemptId, status: 409, body: { ...refused, meta: expect.any(Object) } });
        const q = await inject('POST', `/api/task-attempts/${attemptId}/follow-up-queue`, { autoExecute: true, queue: [{ prompt: 'x', order: 0 }] });
        expect({ attemptId, status: q.statusCode, body: q.json() }).toEqual({ attemptId, status: 409, body: { ...refused, meta: expect.any(Object) } });
        expect((await stack.db.query('SELECT count(*)::int AS n FROM follow_up_queues WHERE task_attempt_id = $1', [attemptId])).rows[0].n).toBe(0);
        // kept for the user without autoExecute, as before
        expect((await inject('POST', `/api/task-attempts/${attemptId}/follow-up-queue`, { queue: [{ prompt: 'x', order: 0 }] })).statusCode).toBe(201);
      }
    } finally {
      // not left for the start reconciler of this stack to finish
      await stack.db.query('UPDATE attempts SET start_pending_since = NULL, status = $2 WHERE id = $1', [starting, 'cancelled']);
    }
  });

  test('a queue whose attempt ends before it is sent: the items not delivered are marked failed, the queue workflow completes', async () => {
    const gone = await insertAttempt(stack, taskId); // no attempt workflow: every signal fails
    const q = (await inject('POST', `/api/task-attempts/${gone}/follow-up-queue`, { queue: [{ prompt: 'a', order: 0 }, { prompt: 'b', order: 1 }] })).json().data;
    const items = q.queue.map((i: { id: string; prompt: string; order: number }) => ({ id: i.id, prompt: i.prompt, order: i.order }));
    const client = await stack.temporal.client();
    const result = await client.workflow.execute('followUpQueueWorkflow', {
      workflowId: `follow-up-queue:${q.id}`,
      taskQueue: stack.config.temporal.taskQueue,
      args: [{ queueId: q.id, attemptId: gone, items }],
    });
    expect(result).toEqual({ sent: 0, failed: 2 });
    const { rows } = await stack.db.query('SELECT status FROM follow_up_queue_items WHERE queue_id = $1 ORDER BY "order"', [q.id]);
    expect(rows.map((r) => r.status)).toEqual(['failed', 'failed']);
  });
});

describe('drafts', () => {
  let attemptId: string;
  beforeAll(async () => {
    attemptId = await insertAttempt(stack, taskId);
  });

  test('create, get, delete a draft; 404s', async () => {
    const r = await inject('POST', `/api/task-attempts/${attemptId}/drafts`, { content: 'Refine the API', type: 'follow_up', metadata: { k: 1 } });
    expect(r.statusCode).toBe(201);
    const d = r.json().data;
    expect(d).toMatchObject({ taskAttemptId: attemptId, content: 'Refine the API', type: 'follow_up', metadata: { k: 1 } });
    expect((await inject('GET', `/api/task-attempts/${attemptId}/drafts/${d.id}`)).json().data).toEqual(d);
    expect((await inject('DELETE', `/api/task-attempts/${attemptId}/drafts/${d.id}`)).json().data).toEqual({ deleted: true, draftId: d.id });
    const gone = await inject('GET', `/api/task-attempts/${attemptId}/drafts/${d.id}`);
    expect(gone.statusCode).toBe(404);
    expect(gone.json().error.code).toBe('NOT_FOUND');
    expect((await inject('DELETE', `/api/task-attempts/${attemptId}/drafts/${d.id}`)).statusCode).toBe(404);
    expect((await inject('POST', '/api/task-attempts/no-such-attempt/drafts', { content: 'x', type: 'initial' })).statusCode).toBe(404);
  });

  test('retry follow-up draft: create and delete', async () => {
    const r = await inject('POST', `/api/task-attempts/${attemptId}/retry-follow-up-draft`, { originalPrompt: 'a', retryPrompt: 'b', retryReason: 'flaky' });
    expect(r.statusCode).toBe(201);
    expect(r.json().data).toMatchObject({ taskAttemptId: attemptId, originalPrompt: 'a', retryPrompt: 'b', retryReason: 'flaky' });
    const id = r.json().data.id;
    expect((await inject('DELETE', `/api/task-attempts/${attemptId}/retry-follow-up-draft/${id}`)).json().data).toEqual({ deleted: true, draftId: id });
    expect((await inject('DELETE', `/api/task-attempts/${attemptId}/retry-follow-up-draft/${id}`)).statusCode).toBe(404);
  });

  test('draft queue keeps order, items queued, carries projectId', async () => {
    const r = await inject('POST', `/api/task-attempts/${attemptId}/draft-queue`, {
      queue: [
        { title: 'B', description: 'second', order: 2 },
        { title: 'A', description: 'first', order: 1 },
      ],
    });
    expect(r.statusCode).toBe(201);
    expect(r.json().data).toMatchObject({ taskAttemptId: attemptId, projectId });
    expect(r.json().data.queue.map((i: { title: string; status: string }) => [i.title, i.status])).toEqual([
      ['A', 'queued'],
      ['B', 'queued'],
    ]);
  });

  test('a draft or queue written while its attempt is being deleted is a 404 and leaves no row (it was a 500: the insert failed its foreign key)', async () => {
    const bodies: [string, unknown, string][] = [
      ['drafts', { content: 'x', type: 'initial' }, 'drafts'],
      ['follow-up-draft', { prompt: 'x' }, 'follow_up_drafts'],
      ['retry-follow-up-draft', { retryPrompt: 'x' }, 'retry_drafts'],
      ['follow-up-queue', { queue: [{ prompt: 'x', order: 1 }] }, 'follow_up_queues'],
      ['draft-queue', { queue: [{ title: 'x', order: 1 }] }, 'draft_queues'],
    ];
    for (const [p, body, table] of bodies) {
      const doomed = await insertAttempt(stack, taskId);
      // the delete is under way (its transaction holds the row) when the request reads the attempt, and commits after
      const deleting = await stack.db.connect();
      try {
        await deleting.query('BEGIN');
        await deleting.query('DELETE FROM attempts WHERE id = $1', [doomed]);
        const answer = inject('POST', `/api/task-attempts/${doomed}/${p}`, body);
        await eventually(async () => (await stack.db.query("SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'")).rowCount);
        await deleting.query('COMMIT');
        const r = await answer;
        expect([p, r.statusCode, r.json().error]).toEqual([p, 404, { code: 'NOT_FOUND', message: `Task attempt ${doomed} not found` }]);
      } finally {
        await deleting.query('ROLLBACK'); // a no-op after the COMMIT
        deleting.release();
      }
      expect([p, (await stack.db.query(`SELECT 1 FROM ${table} WHERE task_attempt_id = $1`, [doomed])).rowCount]).toEqual([p, 0]);
    }
  });

  test('missing content / prompt / retryPrompt and empty or non-array queues are 400 INVALID_REQUEST; other bad input VALIDATION_ERROR', async () => {
    const cases: [string, unknown][] = [
      ['drafts', { type: 'initial' }],
      ['drafts', { content: '', type: 'initial' }],
      ['follow-up-draft', { autoSend: true }],
      ['retry-follow-up-draft', { originalPrompt: 'a' }],
      ['follow-up-queue', { queue: [] }],
      ['follow-up-queue', { queue: 'not an array' }],
      ['follow-up-queue', {}],
      ['draft-queue', { queue: [] }],
      ['draft-queue', { queue: { title: 'x' } }],
    ];
    for (const [p, body] of cases) {
      const r = await inject('POST', `/api/task-attempts/${attemptId}/${p}`, body);
      expect([p, r.statusCode, r.json().error.code]).toEqual([p, 400, 'INVALID_REQUEST']);
    }
    const validation: [string, unknown][] = [
      ['drafts', { content: 'x', type: 'sideways' }],
      ['follow-up-draft', { prompt: 'x', sendAfter: 'tomorrow' }],
      ['follow-up-queue', { queue: [{ prompt: 'x', order: 'first' }] }],
      ['follow-up-queue', { queue: [{ order: 1 }] }],
      ['draft-queue', { queue: [{ description: 'no title', order: 1 }] }],
    ];
    for (const [p, body] of validation) {
      const r = await inject('POST', `/api/task-attempts/${attemptId}/${p}`, body);
      expect([p, r.statusCode, r.json().error.code]).toEqual([p, 400, 'VALIDATION_ERROR']);
    }
  });

  test('/ws/projects/:projectId/drafts streams draft_created, draft_updated and draft_deleted', async () => {
    const address = await stack.app('task').listen({ port: 0, host: '127.0.0.1' });
    const ws = new WebSocket(`${address.replace('http', 'ws')}/ws/projects/${projectId}/drafts`);
    const messages: { type: string; draft?: { id: string; status?: string }; draftId?: string }[] = [];
    ws.on('message', (m) => messages.push(JSON.parse(m.toString())));
    await new Promise((res, rej) => {
      ws.once('open', res);
      ws.once('error', rej);
    });
    const d = (await inject('POST', `/api/task-attempts/${attemptId}/drafts`, { content: 'streamed', type: 'initial' })).json().data;
    await inject('DELETE', `/api/task-attempts/${attemptId}/drafts/${d.id}`);
    const f = (await inject('POST', `/api/task-attempts/${attemptId}/follow-up-draft`, { prompt: 'no workflow', autoSend: true })).json().data;
    await eventually(async () => messages.some((m) => m.type === 'draft_updated' && m.draft?.id === f.id));
    expect(messages.slice(0, 3).map((m) => [m.type, m.draft?.id ?? m.draftId])).toEqual([
      ['draft_created', d.id],
      ['draft_deleted', d.id],
      ['draft_created', f.id],
    ]);
    expect(messages.find((m) => m.type === 'draft_updated')?.draft?.status).toBe('failed');
    ws.close();
  });
});
