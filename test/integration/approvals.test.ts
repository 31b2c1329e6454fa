import crypto from 'node:crypto';
import { temporalToAppError } from '../../api/http/temporalErrors';
import { startClosedWorkflowReconciler } from '../../api/task/closedWorkflowReconciler';
import { reconcileClosedApprovalWorkflows } from '../../lib/approvals/closedWorkflows';
import { createLogger } from '../../lib/logger';
import { mergeBlocker } from '../../lib/db/approvals';
import { nextOpenRows, type OpenRowsWalk } from '../../lib/db/openRowsWalk';
import { approvalStateQuery, approvalWorkflow, respondUpdate, type ApprovalRequest } from '../../workflows/approvalWorkflow';
import { Worker } from '@temporalio/worker';
import type { RunningWorkers } from '../../workers/createWorker';
import { recordHistory } from '../support/attemptHelpers';
import { createProjectAndTask, insertAttempt } from '../support/attempts';
import { env, eventually, startStackWorkers, startTestStack, ensureTemporalRuntime, type TestStack } from '../support/harness';

let stack: TestStack;
let taskId: string;
let restarted: RunningWorkers | undefined;

const A = 'alice@example.com';
const B = 'bob@example.com';
const C = 'carol@example.com';

const inject = (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, user?: string, payload?: unknown) =>
  stack.app('task').inject({ method, url, payload: payload as object, headers: user ? { 'x-user-email': user } : {} });

async function createApproval(body: Record<string, unknown>, user = C) {
  const attemptId = await insertAttempt(stack, taskId);
  const r = await inject('POST', '/api/approvals', user, { taskAttemptId: attemptId, type: 'merge', title: 'Merge it?', ...body });
  expect(r.statusCode).toBe(201);
  return { attemptId, approval: r.json().data };
}

/** Takes a row lock with `sql` in a transaction of its own, held until `release()`: stops a writer at a chosen point. */
async function holdLock(sql: string, params: unknown[]) {
  const locker = await stack.db.connect();
  await locker.query('BEGIN');
  await locker.query(sql, params);
  return {
    async release() {
      await locker.query('ROLLBACK');
      locker.release();
    },
  };
}

const status = async (id: string) => (await inject('GET', `/api/approvals/${id}`)).json().data.status as string;
const pendingIds = async (user: string, query = '') =>
  (await inject('GET', `/api/approvals/pending${query}`, user)).json().data.map((a: { id: string }) => a.id) as string[];

beforeAll(async () => {
  stack = await startTestStack({ services: ['task'], worker: true });
  ({ taskId } = await createProjectAndTask(stack));
});
afterAll(async () => {
  await restarted?.stop();
  await stack.close();
});

describe('approvals', () => {
  test('two approvers: approved only after both approve; non-approver 403; duplicate and closed 409; pending list per user', async () => {
    const { attemptId, approval } = await createApproval({ approvers: [A, 'Bob@Example.com'], description: 'ship v2', metadata: { pr: 7 } });
    expect(approval).toMatchObject({ status: 'pending', closedReason: null, responses: [], approvers: [A, B], createdBy: C, type: 'merge', description: 'ship v2', metadata: { pr: 7 } });
    expect(await mergeBlocker(stack.db, attemptId)).toEqual({ approvalId: approval.id, status: 'pending' });

    expect(await pendingIds(A)).toContain(approval.id);
    expect(await pendingIds(B, '?type=merge')).toContain(approval.id);
    expect(await pendingIds(B, '?type=deploy')).not.toContain(approval.id);
    expect(await pendingIds(C)).not.toContain(approval.id);

    const forbidden = await inject('POST', `/api/approvals/${approval.id}/respond`, C, { decision: 'approved' });
    expect(forbidden.statusCode).toBe(403);
    expect(forbidden.json().error.code).toBe('FORBIDDEN');

    // the workflow's validator refuses on its own (the route's early check aside), mapped to HTTP in one place
    const handle = (await stack.temporal.client()).workflow.getHandle(`approval:${approval.id}`);
    const refused = await handle.executeUpdate(respondUpdate, { args: [{ user: C, decision: 'approved', comment: '' }] }).catch((err) => err);
    expect(await temporalToAppError(refused)).toMatchObject({ statusCode: 403, code: 'FORBIDDEN' });

    const first = await inject('POST', `/api/approvals/${approval.id}/respond`, A, { decision: 'approved', comment: 'lgtm' });
    expect(first.statusCode).toBe(200);
    expect(first.json().data).toMatchObject({ approvalId: approval.id, decision: 'approved', comment: 'lgtm', approvalStatus: 'pending' });
    expect(Date.parse(first.json().data.respondedAt)).toBeGreaterThan(0);
    expect(await status(approval.id)).toBe('pending');
    expect(await pendingIds(A)).not.toContain(approval.id);
    expect(await pendingIds(B)).toContain(approval.id);

    const dup = await inject('POST', `/api/approvals/${approval.id}/respond`, A, { decision: 'rejected' });
    expect(dup.statusCode).toBe(409); // only the validator knows A already responded
    expect(dup.json().error.message).toMatch(/already responded/);
    expect(dup.json().error.code).toBe('CONFLICT');

    const second = await inject('POST', `/api/approvals/${approval.id}/respond`, B, { decision: 'approved' });
    expect(second.json().data.approvalStatus).toBe('approved');
    const detail = (await inject('GET', `/api/approvals/${approval.id}`)).json().data;
    expect(detail.status).toBe('approved');
    expect(detail.responses.map((r: { approver: string; decision: string }) => [r.approver, r.decision])).toEqual([
      [A, 'approved'],
      [B, 'approved'],
    ]);
    expect(await mergeBlocker(stack.db, attemptId)).toBeNull();

    const closed = await inject('POST', `/api/approvals/${approval.id}/respond`, B, { decision: 'approved' });
    expect(closed.statusCode).toBe(409);
    const events = await stack.db.query('SELECT type, data FROM events WHERE data->>\'approvalId\' = $1 ORDER BY seq', [approval.id]);
    expect(events.rows.map((r) => r.type)).toEqual(['approval.created', 'approval.approved']);
    // each event names the approval's task and project (as the approval object does), for a webhook receiver's links
    for (const e of events.rows) expect(e.data).toMatchObject({ taskAttemptId: attemptId, taskId: approval.taskId, projectId: approval.projectId });
    expect(approval.taskId).toEqual(expect.any(String));
    await recordHistory(stack, `approval:${approval.id}`, 'approval-approved-two-approvers');
  });

  test('two approvers answering at once: each answer has the status its own response left, not the later one', async () => {
    const { approval } = await createApproval({ approvers: [A, B] });
    const handle = (await stack.temporal.client()).workflow.getHandle(`approval:${approval.id}`);
    const state = () => handle.query(approvalStateQuery);
    const respond = (user: string) => inject('POST', `/api/approvals/${approval.id}/respond`, user, { decision: 'approved' });
    // A response row needs the approval row (a key-share lock of its foreign key): with that row locked, A's
    // projection write waits, so B's response reaches the workflow while A's is still being written
    const lock = await holdLock('SELECT 1 FROM approvals WHERE id = $1 FOR UPDATE', [approval.id]);
    const first = respond(A);
    let second: ReturnType<typeof respond> | undefined;
    try {
      await eventually(async () => (await state()).responses.length === 1, 10_000, 50);
      second = respond(B);
      await eventually(async () => (await state()).status === 'approved', 10_000, 50);
    } finally {
      await lock.release();
    }
    const [a, b] = await Promise.all([first, second]);
    await recordHistory(stack, `approval:${approval.id}`, 'approval-approved-concurrently');
    expect([a.statusCode, b.statusCode]).toEqual([200, 200]);
    // A's response left the request pending (B had not answered when A's was applied); B's approved it
    expect(a.json().data).toMatchObject({ decision: 'approved', approvalStatus: 'pending' });
    expect(b.json().data).toMatchObject({ decision: 'approved', approvalStatus: 'approved' });
    const detail = (await inject('GET', `/api/approvals/${approval.id}`)).json().data;
    expect(detail.status).toBe('approved');
    expect(detail.responses.map((r: { approver: string }) => r.approver).sort()).toEqual([A, B]);
  });

  test('one rejection rejects; later responses 409; a rejected merge approval blocks the merge', async () => {
    const { attemptId, approval } = await createApproval({ approvers: [A, B] });
    const r = await inject('POST', `/api/approvals/${approval.id}/respond`, B, { decision: 'rejected', comment: 'not yet' });
    expect(r.json().data).toMatchObject({ decision: 'rejected', approvalStatus: 'rejected' });
    expect(await status(approval.id)).toBe('rejected');
    expect((await inject('POST', `/api/approvals/${approval.id}/respond`, A, { decision: 'approved' })).statusCode).toBe(409);
    expect(await mergeBlocker(stack.db, attemptId)).toEqual({ approvalId: approval.id, status: 'rejected' });
    await recordHistory(stack, `approval:${approval.id}`, 'approval-rejected');
  });

  test('without approvers, any one user approves', async () => {
    const { approval } = await createApproval({ type: 'deploy' });
    expect(approval.approvers).toBeNull();
    expect(await pendingIds(B, '?type=deploy')).toContain(approval.id);
    const r = await inject('POST', `/api/approvals/${approval.id}/respond`, B, { decision: 'approved' });
    expect(r.json().data.approvalStatus).toBe('approved');
  });

  test('cancel: requester only, then closed', async () => {
    const { approval } = await createApproval({ approvers: [A] }, C);
    const notRequester = await inject('POST', `/api/approvals/${approval.id}/cancel`, A);
    expect(notRequester.statusCode).toBe(403);
    const r = await inject('POST', `/api/approvals/${approval.id}/cancel`, C);
    expect(r.statusCode).toBe(200);
    expect(r.json().data.status).toBe('cancelled');
    expect((await inject('POST', `/api/approvals/${approval.id}/respond`, A, { decision: 'approved' })).statusCode).toBe(409);
    expect((await inject('POST', `/api/approvals/${approval.id}/cancel`, C)).statusCode).toBe(409);
    await recordHistory(stack, `approval:${approval.id}`, 'approval-cancelled-by-requester');
  });

  test('history: closed approvals the user requested, answered or could answer, latest decided first; pending ones are not in it', async () => {
    const D = 'dave@example.com';
    const E = 'erin@example.com';
    const { approval: forD } = await createApproval({ approvers: [D], title: 'for dave' }, E);
    const { approval: forE } = await createApproval({ approvers: [E], title: 'for erin' }, E);
    const { approval: open } = await createApproval({ approvers: [D], title: 'still open' }, E);
    expect((await inject('POST', `/api/approvals/${forD.id}/respond`, D, { decision: 'rejected', comment: 'no' })).statusCode).toBe(200);
    expect((await inject('POST', `/api/approvals/${forE.id}/respond`, E, { decision: 'approved' })).statusCode).toBe(200);

    const history = async (user: string, query = '') => {
      const r = await inject('GET', `/api/approvals/history${query}`, user);
      expect(r.statusCode).toBe(200);
      return r.json() as { data: { id: string; status: string; responses: { comment: string }[] }[]; pagination: { total: number } };
    };
    // (approvals of other tests without an approver list are anyone's to answer, so in everyone's history: they are
    // all `deploy`, hence the type filter)
    const ofD = await history(D, '?type=merge');
    expect(ofD.data.map((a) => a.id)).toEqual([forD.id]); // an approver of it; not of forE; `open` is pending
    expect(ofD.data[0]).toMatchObject({ status: 'rejected', responses: [expect.objectContaining({ comment: 'no' })] });
    const all = (await history(D)).data.map((a) => a.id);
    expect(all).toContain(forD.id);
    expect(all).not.toContain(forE.id);
    expect(all).not.toContain(open.id);
    const ofE = await history(E, '?type=merge'); // the requester of both: latest decided first
    expect(ofE.data.map((a) => a.id)).toEqual([forE.id, forD.id]);
    expect(ofE.pagination.total).toBe(2);
    expect((await history(E, '?type=merge&limit=1&page=2')).data.map((a) => a.id)).toEqual([forD.id]);
    expect((await inject('GET', '/api/approvals/history?type=nope', E)).statusCode).toBe(400);
  });

  test('every answer names the task and project of the approval (read through its attempt), with the task title as it is now', async () => {
    const F = 'frank@example.com';
    const own = await createProjectAndTask(stack);
    const attemptId = await insertAttempt(stack, own.taskId);
    const created = await inject('POST', '/api/approvals', C, { taskAttemptId: attemptId, type: 'merge', title: 'Link me', approvers: [F] });
    expect(created.statusCode).toBe(201);
    const names = { taskAttemptId: attemptId, taskId: own.taskId, projectId: own.projectId, taskTitle: 'Task for attempts' };
    expect(created.json().data).toMatchObject(names);
    const id = created.json().data.id as string;
    expect((await inject('GET', `/api/approvals/${id}`)).json().data).toMatchObject(names);

    // the title is the task's current one: a rename shows in the next read
    const renamed = await inject('PATCH', `/api/tasks/${own.taskId}`, C, { title: 'Renamed task' });
    expect(renamed.statusCode).toBe(200);
    const pending = (await inject('GET', '/api/approvals/pending', F)).json().data as Record<string, unknown>[];
    expect(pending.find((a) => a.id === id)).toMatchObject({ ...names, taskTitle: 'Renamed task' });

    const cancelled = await inject('POST', `/api/approvals/${id}/cancel`, C);
    expect(cancelled.json().data).toMatchObject({ status: 'cancelled', ...names, taskTitle: 'Renamed task' });
    const history = (await inject('GET', '/api/approvals/history?type=merge', F)).json().data as Record<string, unknown>[];
    expect(history.find((a) => a.id === id)).toMatchObject({ status: 'cancelled', ...names, taskTitle: 'Renamed task' });
    // and the task service's own task route answers for that id: what a client links to
    expect((await inject('GET', `/api/tasks/${own.taskId}`)).json().data).toMatchObject({ id: own.taskId, projectId: own.projectId, title: 'Renamed task' });
  });

  test('bad input: 400 on a bad body, 404 on an unknown attempt or approval; /pending is not taken as an id', async () => {
    const attemptId = await insertAttempt(stack, taskId);
    const bad = await inject('POST', '/api/approvals', C, { taskAttemptId: attemptId, type: 'launch', title: 'x' });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().error.code).toBe('VALIDATION_ERROR');
    expect((await inject('POST', '/api/approvals', C, { taskAttemptId: attemptId, type: 'merge' })).statusCode).toBe(400);
    expect((await inject('POST', '/api/approvals', C, { taskAttemptId: attemptId, type: 'merge', title: 't', approvers: ['nope'] })).statusCode).toBe(400);
    const past = await inject('POST', '/api/approvals', C, { taskAttemptId: attemptId, type: 'merge', title: 't', expiresAt: '2001-01-01T00:00:00Z' });
    expect(past.statusCode).toBe(400);
    const unknown = await inject('POST', '/api/approvals', C, { taskAttemptId: 'no-such-attempt', type: 'merge', title: 't' });
    expect(unknown.statusCode).toBe(404);
    expect((await inject('GET', '/api/approvals/nope')).statusCode).toBe(404);
    expect((await inject('POST', '/api/approvals/nope/respond', A, { decision: 'approved' })).statusCode).toBe(404);
    expect((await inject('POST', `/api/approvals/nope/respond`, A, { decision: 'maybe' })).statusCode).toBe(400);
    const pending = await inject('GET', '/api/approvals/pending?limit=1', A);
    expect(pending.statusCode).toBe(200);
    expect(pending.json().pagination).toMatchObject({ page: 1, limit: 1 });
  });

  test('a blank title is 400 naming title, never stored empty (it is stored trimmed)', async () => {
    const attemptId = await insertAttempt(stack, taskId);
    for (const title of ['   ', '\t\n', '\u3000', '\ufeff']) {
      const r = await inject('POST', '/api/approvals', C, { taskAttemptId: attemptId, type: 'merge', title });
      expect([JSON.stringify(title), r.statusCode, r.json().error?.code]).toEqual([JSON.stringify(title), 400, 'VALIDATION_ERROR']);
      expect(r.json().error.details).toHaveProperty('title');
    }
    const { rows } = await stack.db.query('SELECT title FROM approvals WHERE task_attempt_id = $1', [attemptId]);
    expect(rows).toEqual([]);
    const { approval } = await createApproval({ title: '  Ship it  ' });
    expect(approval.title).toBe('Ship it');
  });

  test('expiresAt passing first makes the approval expired', async () => {
    const { approval } = await createApproval({ approvers: [A, B], expiresAt: new Date(Date.now() + 2500).toISOString() });
    await inject('POST', `/api/approvals/${approval.id}/respond`, A, { decision: 'approved' });
    await eventually(async () => (await status(approval.id)) === 'expired', 20_000, 200);
    expect((await inject('POST', `/api/approvals/${approval.id}/respond`, B, { decision: 'approved' })).statusCode).toBe(409);
    expect(await pendingIds(B)).not.toContain(approval.id);
    expect(await (await stack.temporal.client()).workflow.getHandle(`approval:${approval.id}`).result()).toBe('expired');
    await recordHistory(stack, `approval:${approval.id}`, 'approval-expired-after-one-approval');
  });

  describe('deleting the attempt closes its pending approvals: workflow cancelled, approval.cancelled published', () => {
    // the rows went with the attempt (ON DELETE CASCADE) while approval:<id> ran on: to its expiry, or for ever
    const far = () => new Date(Date.now() + 30 * 24 * 3600_000).toISOString();
    const create = async (attemptId: string, body: Record<string, unknown> = {}) => {
      const r = await inject('POST', '/api/approvals', C, { taskAttemptId: attemptId, type: 'merge', title: 'Merge it?', ...body });
      expect(r.statusCode).toBe(201);
      return r.json().data.id as string;
    };
    /** The counter's value for one status in the task service's /metrics text (0 while it has no series). */
    const counted = async (status: string) => {
      const text = (await inject('GET', '/metrics')).body;
      const m = text.match(new RegExp(`^armada_approvals_total\\{status="${status}"\\} (\\d+)$`, 'm'));
      return m ? Number(m[1]) : 0;
    };
    /**
     * Every approval's workflow has closed (not RUNNING), each a cancelled one but `decided`: CANCELLED, or completed
     * `not-stored` when its first activity ran only after the delete and found the row gone (`cancelled` in runs
     * started before `approval-waits-for-row`, whose first activity found the attempt gone).
     */
    const expectClosed = async (ids: string[], decided?: string) => {
      const client = await stack.temporal.client();
      const statusOf = async (id: string) => (await client.workflow.getHandle(`approval:${id}`).describe()).status.name;
      const all = decided ? [...ids, decided] : ids;
      await eventually(async () => (await Promise.all(all.map(statusOf))).every((s) => s !== 'RUNNING'), 5000, 100);
      for (const id of ids) {
        const status = await statusOf(id);
        const ended = status === 'COMPLETED' ? `COMPLETED: ${await client.workflow.getHandle(`approval:${id}`).result()}` : status;
        expect([id, ['CANCELLED', 'COMPLETED: not-stored', 'COMPLETED: cancelled'].includes(ended) ? 'cancelled' : ended]).toEqual([id, 'cancelled']);
      }
      const ev = await stack.db.query("SELECT data->>'approvalId' AS id, data->>'status' AS status FROM events WHERE type = 'approval.cancelled' AND data->>'approvalId' = ANY($1)", [all]);
      expect(ev.rows.map((r) => r.id).sort()).toEqual([...ids].sort());
      expect(ev.rows.every((r) => r.status === 'cancelled')).toBe(true);
      for (const id of all) expect((await inject('GET', `/api/approvals/${id}`)).statusCode).toBe(404);
    };

    test('DELETE /api/attempts/:id', async () => {
      const attemptId = await insertAttempt(stack, taskId, 'completed');
      const timed = await create(attemptId, { expiresAt: far() });
      const open = await create(attemptId); // no expiry: it would never end
      const decided = await create(attemptId, { approvers: [A] });
      expect((await inject('POST', `/api/approvals/${decided}/respond`, A, { decision: 'approved' })).statusCode).toBe(200);
      const del = await inject('DELETE', `/api/attempts/${attemptId}`);
      expect(del.statusCode).toBe(200);
      await expectClosed([timed, open], decided);
      await recordHistory(stack, `approval:${timed}`, 'approval-cancelled-attempt-deleted');
    });

    test('approvals cancelled by the delete are counted in armada_approvals_total{status="cancelled"}, as a requester\'s cancel is', async () => {
      const attemptId = await insertAttempt(stack, taskId, 'completed');
      const byRequester = await create(attemptId);
      const cancelled0 = await counted('cancelled');
      expect((await inject('POST', `/api/approvals/${byRequester}/cancel`, C)).statusCode).toBe(200);
      expect(await counted('cancelled')).toBe(cancelled0 + 1);

      const pending = [await create(attemptId, { expiresAt: far() }), await create(attemptId)];
      const decided = await create(attemptId, { approvers: [A] });
      expect((await inject('POST', `/api/approvals/${decided}/respond`, A, { decision: 'approved' })).statusCode).toBe(200);
      const approved = await counted('approved');
      expect((await inject('DELETE', `/api/attempts/${attemptId}`)).statusCode).toBe(200);
      await expectClosed(pending, decided);
      expect(await counted('cancelled')).toBe(cancelled0 + 1 + pending.length);
      expect(await counted('approved')).toBe(approved); // the decided one keeps its decision and is not counted again
    });

    // an approval requested while a delete runs (after its first pass over the pending approvals, before the rows go)
    // went with the rows while its workflow ran on, to its expiry or for ever
    test.each(['attempt', 'task', 'project'] as const)('an approval created while DELETE of its %s runs ends with it too', async (what) => {
      const owner = await createProjectAndTask(stack);
      const attemptId = await insertAttempt(stack, owner.taskId); // running: the delete cancels it (an UPDATE of its row)
      const early = await create(attemptId, { expiresAt: far() });
      const url = { attempt: `/api/attempts/${attemptId}`, task: `/api/tasks/${owner.taskId}`, project: `/api/projects/${owner.projectId}` }[what];
      // the delete's cancelling of the attempt waits for this lock; an approval's insert (a key-share lock of its
      // foreign key) does not
      const cancelled0 = await counted('cancelled');
      const lock = await holdLock('SELECT 1 FROM attempts WHERE id = $1 FOR NO KEY UPDATE', [attemptId]);
      let late = '';
      let deleting: ReturnType<typeof inject> | undefined;
      try {
        deleting = inject('DELETE', url);
        await eventually(async () => (await stack.db.query("SELECT 1 FROM approvals WHERE id = $1 AND status = 'cancelled'", [early])).rowCount, 10_000, 50);
        late = await create(attemptId, { expiresAt: far() });
      } finally {
        await lock.release();
      }
      expect((await deleting).statusCode).toBe(200);
      await expectClosed([early, late]);
      expect(await counted('cancelled')).toBe(cancelled0 + 2);
    });

    test('an approval requested while a delete of its attempt commits: 404, nothing kept', async () => {
      const attemptId = await insertAttempt(stack, taskId);
      // stands for the delete's transaction: it holds the attempt's row, and commits the delete while the request waits
      const deleter = await stack.db.connect();
      try {
        await deleter.query('BEGIN');
        await deleter.query('SELECT 1 FROM attempts WHERE id = $1 FOR UPDATE', [attemptId]);
        const requesting = inject('POST', '/api/approvals', C, { taskAttemptId: attemptId, type: 'merge', title: 'Merge it?' });
        await eventually(
          async () => (await stack.db.query("SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'")).rowCount,
          10_000,
          20,
        );
        await deleter.query('DELETE FROM attempts WHERE id = $1', [attemptId]);
        await deleter.query('COMMIT');
        const r = await requesting;
        expect([r.statusCode, r.json().error?.code]).toEqual([404, 'NOT_FOUND']);
      } finally {
        deleter.release();
      }
      expect((await stack.db.query('SELECT 1 FROM approvals WHERE task_attempt_id = $1', [attemptId])).rowCount).toBe(0);
    });

    test('a workflow whose request never committed, for an attempt deleted meanwhile, ends not-stored without a row', async () => {
      // the create route starts the workflow inside its transaction: when that transaction does not commit (the
      // process died), the workflow finds no row and ends doing nothing. Before, its first activity inserted the row
      // itself: here it could not (the attempt is gone) and retried for ever while the workflow waited on (an earlier
      // fix ended it `cancelled`); with the attempt still there it made the row (approvalCommitFaults.test.ts)
      const attemptId = await insertAttempt(stack, taskId, 'completed');
      await stack.db.query('DELETE FROM attempts WHERE id = $1', [attemptId]);
      const request: ApprovalRequest = {
        id: crypto.randomUUID(),
        taskAttemptId: attemptId,
        type: 'merge',
        title: 'Merge it?',
        description: null,
        metadata: {},
        approvers: null,
        expiresAt: far(),
        createdBy: C,
        createdAt: new Date().toISOString(),
      };
      const client = await stack.temporal.client();
      const handle = await client.workflow.start(approvalWorkflow, { workflowId: `approval:${request.id}`, taskQueue: stack.config.temporal.taskQueue, args: [request] });
      await eventually(async () => (await handle.describe()).status.name !== 'RUNNING', 20_000, 200);
      expect(await handle.result()).toBe('not-stored');
      expect((await stack.db.query('SELECT 1 FROM approvals WHERE id = $1', [request.id])).rowCount).toBe(0);
      expect((await stack.db.query("SELECT 1 FROM events WHERE data->>'approvalId' = $1", [request.id])).rowCount).toBe(0);
      await recordHistory(stack, handle.workflowId, 'approval-attempt-gone-before-recorded');
    });

    test('DELETE /api/tasks/:id and DELETE /api/projects/:id', async () => {
      const ofTask = await createProjectAndTask(stack);
      const byTask = [await create(await insertAttempt(stack, ofTask.taskId), { expiresAt: far() }), await create(await insertAttempt(stack, ofTask.taskId, 'completed'))];
      expect((await inject('DELETE', `/api/tasks/${ofTask.taskId}`)).statusCode).toBe(200);
      await expectClosed(byTask);
      const ofProject = await createProjectAndTask(stack);
      const byProject = [await create(await insertAttempt(stack, ofProject.taskId, 'failed'), { expiresAt: far() })];
      expect((await inject('DELETE', `/api/projects/${ofProject.projectId}`)).statusCode).toBe(200);
      await expectClosed(byProject);
    });
  });

  describe("closed from Temporal's side (terminated), while pending", () => {
    const REASON = 'the workflow was terminated in Temporal (reason: gone by hand)';
    const cancelledCount = async () => Number((await inject('GET', '/metrics')).body.match(/^armada_approvals_total\{status="cancelled"\} (\d+)$/m)?.[1] ?? 0);
    const cancelledEvents = async (id: string) =>
      (await stack.db.query<{ data: { reason?: string } }>("SELECT data FROM events WHERE type = 'approval.cancelled' AND data->>'approvalId' = $1", [id])).rows;
    const terminate = async (id: string, reason: string) => {
      const handle = (await stack.temporal.client()).workflow.getHandle(`approval:${id}`);
      // the workflow has recorded its row and waits for a decision
      await eventually(async () => (await handle.fetchHistory()).events?.some((e) => e.activityTaskCompletedEventAttributes), 15_000, 200);
      await handle.terminate(reason);
      expect((await handle.describe()).status.name).toBe('TERMINATED');
    };
    /** Nothing flips it back: another pass, a response, a cancel; one approval.cancelled event. */
    const staysCancelled = async (id: string) => {
      expect((await reconcileClosedApprovalWorkflows(stack.db, await stack.temporal.client(), 0)).recorded).not.toContain(id);
      const respond = await inject('POST', `/api/approvals/${id}/respond`, A, { decision: 'approved' });
      expect(respond.statusCode).toBe(409);
      expect(respond.json().error).toMatchObject({ code: 'CONFLICT', message: `Approval ${id} is cancelled, no longer pending: ${REASON}` });
      const cancel = await inject('POST', `/api/approvals/${id}/cancel`, C);
      expect(cancel.statusCode).toBe(409);
      const got = (await inject('GET', `/api/approvals/${id}`)).json().data;
      expect(got).toMatchObject({ status: 'cancelled', closedReason: REASON, responses: [] });
      expect(Date.parse(got.decidedAt)).toBeGreaterThan(0);
      expect(await pendingIds(A)).not.toContain(id);
      expect((await cancelledEvents(id)).map((e) => e.data.reason)).toEqual([REASON]);
    };

    test('the closed-workflow reconciler records it cancelled, saying how the workflow ended', async () => {
      const { approval } = await createApproval({ approvers: [A] });
      await terminate(approval.id, 'gone by hand');
      expect(await status(approval.id)).toBe('pending'); // until the pass
      const cancelled0 = await cancelledCount();
      // the task API's reconciler, driven here (no grace after the close, no timer of its own)
      const lines: { msg: string; approvals?: string[] }[] = [];
      const logger = createLogger('info', 'armada', { write: (l: string) => void lines.push(JSON.parse(l)) });
      const file = { ...stack.config.file, attempts: { ...stack.config.file.attempts, closedWorkflowGraceMs: 0 } };
      const reconciler = startClosedWorkflowReconciler(
        { db: stack.db, config: { ...stack.config, file }, temporal: stack.temporal, metrics: stack.metrics, logger },
        { everyMs: 3_600_000 },
      );
      try {
        // visibility lists the close a moment after it: a pass finds it then
        await eventually(async () => (await reconciler.runOnce()).approvals.includes(approval.id), 20_000, 250);
      } finally {
        await reconciler.stop();
      }
      expect(lines.some((l) => l.approvals?.includes(approval.id) && /^recorded approvals cancelled or expired \(past their expiry\) whose workflow Temporal had closed/.test(l.msg))).toBe(true);
      expect(await cancelledCount()).toBe(cancelled0 + 1);
      await staysCancelled(approval.id);
      expect(await cancelledCount()).toBe(cancelled0 + 1);
    });

    test('a response before any pass finds the workflow gone: recorded cancelled at once, answered 409', async () => {
      const { approval } = await createApproval({ approvers: [A] });
      await terminate(approval.id, 'gone by hand');
      // a grace longer than the test: the pass leaves it alone
      expect((await reconcileClosedApprovalWorkflows(stack.db, await stack.temporal.client(), 3_600_000)).recorded).toEqual([]);
      expect(await status(approval.id)).toBe('pending');
      const first = await inject('POST', `/api/approvals/${approval.id}/respond`, A, { decision: 'approved' });
      expect(first.statusCode).toBe(409);
      expect(first.json().error).toMatchObject({ code: 'CONFLICT', message: `Approval ${approval.id} is cancelled, no longer pending: ${REASON}` });
      expect(await status(approval.id)).toBe('cancelled');
      await staysCancelled(approval.id);
    });

    const expiredCount = async () => Number((await inject('GET', '/metrics')).body.match(/^armada_approvals_total\{status="expired"\} (\d+)$/m)?.[1] ?? 0);
    const eventsOf = async (id: string) =>
      (await stack.db.query<{ type: string; data: { reason?: string } }>("SELECT type, data FROM events WHERE type LIKE 'approval.%' AND data->>'approvalId' = $1 ORDER BY seq", [id])).rows;
    /** The close time Temporal gives the terminated workflow of approval `id`. */
    const closeTimeOf = async (id: string) => (await (await stack.temporal.client()).workflow.getHandle(`approval:${id}`).describe()).closeTime as Date;

    test('closed after its expiry had passed: the pass records it expired (not cancelled); one closed before its expiry stays cancelled', async () => {
      const far = () => new Date(Date.now() + 30 * 24 * 3600_000).toISOString();
      /**
       * Terminates the request's workflow; with `expiredBeforeClose` its expiry is then moved to a second before the
       * close: what a request looks like whose worker was away at its expiry (its timer never fired) and which an
       * operator then terminated.
       */
      const closeIt = async (id: string, expiredBeforeClose: boolean) => {
        await terminate(id, 'gone by hand');
        if (!expiredBeforeClose) return undefined;
        const at = new Date((await closeTimeOf(id)).getTime() - 1000);
        await stack.db.query('UPDATE approvals SET expires_at = $2 WHERE id = $1', [id, at]);
        return at;
      };
      const byPass = (await createApproval({ approvers: [A], expiresAt: far() })).approval;
      // stopped while it could still be answered: cancelled, as before
      const before = (await createApproval({ approvers: [A], expiresAt: far() })).approval;
      const expiredAt = await closeIt(byPass.id, true);
      await closeIt(before.id, false);
      const expired0 = await expiredCount();
      const cancelled0 = await cancelledCount();
      // the task API's reconciler, driven here (no grace after the close, no timer of its own)
      const file = { ...stack.config.file, attempts: { ...stack.config.file.attempts, closedWorkflowGraceMs: 0 } };
      const lines: { msg: string; approvals?: string[]; statuses?: string[] }[] = [];
      const logger = createLogger('info', 'armada', { write: (l: string) => void lines.push(JSON.parse(l)) });
      const reconciler = startClosedWorkflowReconciler(
        { db: stack.db, config: { ...stack.config, file }, temporal: stack.temporal, metrics: stack.metrics, logger },
        { everyMs: 3_600_000 },
      );
      const seen = new Map<string, string>();
      try {
        // visibility lists the closes a moment after them
        await eventually(
          async () => {
            for (const id of (await reconciler.runOnce()).approvals) seen.set(id, await status(id));
            return seen.has(byPass.id) && seen.has(before.id);
          },
          20_000,
          250,
        );
      } finally {
        await reconciler.stop();
      }
      const client = await stack.temporal.client();
      expect(seen.get(byPass.id)).toBe('expired');
      expect(seen.get(before.id)).toBe('cancelled');
      const said = lines.find((l) => l.approvals?.includes(byPass.id));
      expect(said?.msg).toMatch(/^recorded approvals cancelled or expired \(past their expiry\) whose workflow Temporal had closed/);
      expect(said?.statuses?.[said.approvals?.indexOf(byPass.id) ?? -1]).toBe('expired');
      const got = (await inject('GET', `/api/approvals/${byPass.id}`)).json().data;
      expect(got).toMatchObject({ status: 'expired', closedReason: REASON, decidedAt: expiredAt?.toISOString() });
      expect((await eventsOf(byPass.id)).map((e) => [e.type, e.data.reason])).toEqual([
        ['approval.created', undefined],
        ['approval.expired', REASON],
      ]);
      expect((await inject('GET', `/api/approvals/${before.id}`)).json().data).toMatchObject({ status: 'cancelled', closedReason: REASON });
      expect((await eventsOf(before.id)).map((e) => e.type)).toEqual(['approval.created', 'approval.cancelled']);

      const count = (status: string) => [...seen.values()].filter((s) => s === status).length;
      expect(await expiredCount()).toBe(expired0 + count('expired'));
      expect(await cancelledCount()).toBe(cancelled0 + count('cancelled'));
      for (const a of [byPass, before]) expect(await pendingIds(A)).not.toContain(a.id);
      // nothing flips it back: a response is answered from the row
      const answered = await inject('POST', `/api/approvals/${byPass.id}/respond`, A, { decision: 'approved' });
      expect(answered.statusCode).toBe(409);
      expect(answered.json().error).toMatchObject({ code: 'CONFLICT', message: `Approval ${byPass.id} is expired, no longer pending: ${REASON}` });
      expect((await reconcileClosedApprovalWorkflows(stack.db, client, 0)).recorded).not.toContain(byPass.id);
      expect(await status(byPass.id)).toBe('expired');
    });

    test('a pass reads only the approvals still pending: one recorded before is not listed again, while Temporal still lists its workflow closed', async () => {
      const { approval } = await createApproval({ approvers: [A] });
      await terminate(approval.id, 'gone by hand');
      const client = await stack.temporal.client();
      const first = await eventually(
        async () => {
          const pass = await reconcileClosedApprovalWorkflows(stack.db, client, 0);
          return pass.recorded.includes(approval.id) && pass;
        },
        20_000,
        250,
      );
      expect(first.listed).toContain(approval.id);
      // what the pass before session 49 read every minute: every approval workflow closed other than by completing
      let closedInTemporal = 0;
      for await (const w of client.workflow.list({ query: `WorkflowType = 'approvalWorkflow' AND ExecutionStatus != 'Completed' AND ExecutionStatus != 'Running'` })) {
        if (w.workflowId.startsWith('approval:')) closedInTemporal++;
      }
      const recordedBefore = (await stack.db.query<{ id: string }>("SELECT id FROM approvals WHERE status <> 'pending' AND closed_reason IS NOT NULL")).rows.map((r) => r.id);
      expect(recordedBefore).toContain(approval.id);
      const second = await reconcileClosedApprovalWorkflows(stack.db, client, 0);
      // none of the approvals recorded before is read again (they are no longer pending), though Temporal lists them all
      expect(second.listed.filter((id) => recordedBefore.includes(id))).toEqual([]);
      expect(second.recorded).toEqual([]);
      expect(closedInTemporal).toBeGreaterThanOrEqual(recordedBefore.length);
      expect(second.listed.length).toBeLessThan(closedInTemporal);
      process.stdout.write(`closed approval workflows in Temporal: ${closedInTemporal}; listed by the second pass: ${second.listed.length}\n`);
    });

    test("the pass's walk over the pending rows: bounded pages, each row once, then from the first again", async () => {
      for (let i = 0; i < 3; i++) await createApproval({ approvers: [A] });
      const pending = (await stack.db.query<{ id: string }>("SELECT id FROM approvals WHERE status = 'pending'")).rows.map((r) => r.id);
      expect(pending.length).toBeGreaterThanOrEqual(3);
      const walk: OpenRowsWalk = {};
      const pages: string[][] = [];
      do pages.push(await nextOpenRows(stack.db, 'approvals', `status = 'pending'`, 0, walk, 2));
      while (walk.after && pages.length < 100);
      expect(walk.after).toBeUndefined();
      for (const page of pages) expect(page.length).toBeLessThanOrEqual(2);
      const seen = pages.flat();
      expect(new Set(seen).size).toBe(seen.length);
      expect([...seen].sort()).toEqual([...pending].sort());
      // the next page starts over from the first row
      expect(await nextOpenRows(stack.db, 'approvals', `status = 'pending'`, 0, walk, 2)).toEqual(pages[0]);
    });
  });

  test('expiry is durable: worker stopped across the expiry instant, started again afterwards', async () => {
    const { approval } = await createApproval({ approvers: [A], expiresAt: new Date(Date.now() + 3000).toISOString() });
    // the workflow has started and armed its timer (its first activity ran)
    const handle = (await stack.temporal.client()).workflow.getHandle(`approval:${approval.id}`);
    await eventually(async () => (await handle.fetchHistory()).events?.some((e) => e.timerStartedEventAttributes), 15_000, 200);
    await stack.workers?.stop();
    await new Promise((r) => setTimeout(r, Math.max(0, Date.parse(approval.expiresAt) - Date.now()) + 1500));
    expect(await status(approval.id)).toBe('pending'); // nobody was there to expire it
    restarted = await startStackWorkers(stack);
    await eventually(async () => (await status(approval.id)) === 'expired', 40_000, 250);
    expect(await handle.result()).toBe('expired');
    const ev = await stack.db.query("SELECT type FROM events WHERE type = 'approval.expired' AND data->>'approvalId' = $1", [approval.id]);
    expect(ev.rowCount).toBe(1);
  }, 90_000);

  test('replay: the histories of this file\'s approval workflows replay against the current workflow code', async () => {
    const client = await stack.temporal.client();
    const ids = (await stack.db.query<{ id: string }>('SELECT id FROM approvals')).rows.map((r) => `approval:${r.id}`);
    expect(ids.length).toBeGreaterThan(5);
    for (const workflowId of ids) {
      const history = await client.workflow.getHandle(workflowId).fetchHistory();
      ensureTemporalRuntime();
      await Worker.runReplayHistory({ workflowBundle: { codePath: env('ARMADA_WORKFLOW_BUNDLE') }, replayName: workflowId }, history, workflowId);
    }
  });
});
