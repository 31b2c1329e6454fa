/**
 * POST /api/approvals starts the request's `approvalWorkflow` inside the transaction that inserts its row, before the
 * COMMIT (the row commits only when the start succeeded). The other side of that: the workflow runs whether or not the
 * row commits. These tests end the transaction at its COMMIT, after the start, as a PostgreSQL restart or a kill -9 of
 * the API does, and check what is left: no approval and no running workflow for a row that never committed (its
 * answer was a 503, or none at all), so a client that sends it again gets one approval, not two; one approval, that
 * takes responses, for a row that did commit. Before session 49 the workflow's first activity inserted the row itself
 * when the API's transaction had not, and a request answered 503 still became an approval.
 *
 * The COMMIT is held by a deferred constraint trigger of the test's database (it sleeps in the commit of an approval
 * whose title starts with HOLD), so the moment is certain: the test sees the backend sleeping in its COMMIT, then ends
 * it (pg_terminate_backend, what a PostgreSQL restart does to every session) or lets it finish.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { POSTGRES_OUTCOME_UNKNOWN } from '../../lib/db/releasedWhenDown';
import { createDependencyState } from '../../lib/runtime/dependencies';
import { spawnApi, type ApiProcess } from '../support/apiProcess';
import { approvalOutcomes } from '../support/approvalOutcomes';
import { createProjectAndTask, insertAttempt } from '../support/attempts';
import { holdCommitsOf } from '../support/holdCommit';
import { eventually, logger, startTestStack, TEST_API_KEY, type TestStack } from '../support/harness';

jest.setTimeout(180_000);

let stack: TestStack;
let taskId: string;
const apiHome = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-approval-commit-'));
let api: ApiProcess | undefined;

const REQUESTER = 'carol@example.com';
const APPROVER = 'alice@example.com';

/** The backend of this database sleeping in a held COMMIT (the trigger below), once there is one. */
async function heldCommit(): Promise<number> {
  return eventually(async () => {
    const { rows } = await stack.db.query<{ pid: number }>(
      "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND query = 'COMMIT' AND wait_event = 'PgSleep'",
    );
    return rows[0]?.pid;
  }, 30_000, 50);
}

/** The approval workflows of the stack's queue started since `since`, once Temporal lists at least `atLeast`. */
async function approvalRunsSince(since: Date, atLeast: number): Promise<{ workflowId: string; status: string }[]> {
  const client = await stack.temporal.client();
  return eventually(async () => {
    const runs: { workflowId: string; status: string }[] = [];
    const query = `TaskQueue = '${stack.config.temporal.taskQueue}' AND WorkflowType = 'approvalWorkflow' AND StartTime >= '${since.toISOString()}'`;
    for await (const w of client.workflow.list({ query })) runs.push({ workflowId: w.workflowId, status: w.status.name });
    return runs.length >= atLeast ? runs : undefined;
  }, 30_000, 250);
}

const { resultOf, approvalsOf, eventsOf } = approvalOutcomes(() => stack);

beforeAll(async () => {
  // with dependency tracking, as `armada api` runs: its pool says when a write's outcome is unknown
  stack = await startTestStack({ services: ['task'], worker: true, dependencies: createDependencyState(logger) });
  ({ taskId } = await createProjectAndTask(stack));
  // sleeps in the COMMIT of an approval whose title starts with HOLD (HOLD-LONG: 60 s, else 3 s)
  await holdCommitsOf(stack.db, [{ table: 'approvals', column: 'title' }]);
}, 120_000);
afterAll(async () => {
  await api?.stop();
  await stack?.close();
  fs.rmSync(apiHome, { recursive: true, force: true });
});

test('a create whose COMMIT dies after the workflow started (PostgreSQL ended the session): 503 naming the approval, no row, no running workflow; sent again, one approval', async () => {
  const attemptId = await insertAttempt(stack, taskId);
  const since = new Date(Date.now() - 1000);
  const body = { taskAttemptId: attemptId, type: 'merge', title: 'HOLD-LONG: never stored', approvers: [APPROVER] };
  const answer = stack.app('task').inject({ method: 'POST', url: '/api/approvals', payload: body, headers: { 'x-user-email': REQUESTER } });
  const pid = await heldCommit();
  // the workflow was started before the COMMIT was sent
  await stack.db.query('SELECT pg_terminate_backend($1)', [pid]);
  const r = await answer;
  expect(r.statusCode).toBe(503);
  // the COMMIT was sent when the session ended: it may have committed first, so the answer says so, with the
  // approval's id to read it by (a 404 there: it was not stored)
  const error = r.json().error;
  expect(error).toMatchObject({ code: 'SERVICE_UNAVAILABLE', details: { outcome: 'unknown', approvalId: expect.any(String) } });
  expect(error.message).toContain(POSTGRES_OUTCOME_UNKNOWN);
  const { approvalId } = error.details;
  expect((await stack.app('task').inject({ method: 'GET', url: `/api/approvals/${approvalId}` })).statusCode).toBe(404);

  // its workflow ran (it was started), found no row and ended without making one
  const runs = await approvalRunsSince(since, 1);
  expect(runs.map((w) => w.workflowId)).toEqual([`approval:${approvalId}`]);
  expect(await resultOf(approvalId)).toBe('not-stored');
  expect(await approvalsOf(attemptId)).toEqual([]);
  expect(await eventsOf(approvalId)).toBe(0);

  // the client sends it again, as it may: one approval, one running workflow, and it takes its approver's answer
  const again = await stack.app('task').inject({ method: 'POST', url: '/api/approvals', payload: { ...body, title: 'stored this time' }, headers: { 'x-user-email': REQUESTER } });
  expect(again.statusCode).toBe(201);
  const id = again.json().data.id;
  expect(await approvalsOf(attemptId)).toEqual([{ id, status: 'pending' }]);
  const respond = await stack.app('task').inject({ method: 'POST', url: `/api/approvals/${id}/respond`, payload: { decision: 'approved' }, headers: { 'x-user-email': APPROVER } });
  expect([respond.statusCode, respond.json().data?.approvalStatus]).toEqual([200, 'approved']);
  expect(await resultOf(id)).toBe('approved');
  const all = await approvalRunsSince(since, 2);
  expect(all.filter((w) => w.status === 'RUNNING')).toEqual([]);
});

describe('kill -9 of armada api while an approval commits', () => {
  const post = (attemptId: string, title: string, expiresAt?: string) =>
    fetch(`${api?.base('task')}/api/approvals`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': TEST_API_KEY, 'x-user-email': REQUESTER },
      body: JSON.stringify({ taskAttemptId: attemptId, type: 'deploy', title, approvers: [APPROVER], ...(expiresAt ? { expiresAt } : {}) }),
    }).then(
      (r) => r.status,
      () => 'no answer' as const,
    );
  const startApi = async () => {
    api = await spawnApi({ home: apiHome, databaseUrl: stack.dbUrl, services: ['task'], env: { ARMADA_TASK_QUEUE: stack.config.temporal.taskQueue } });
    return api;
  };

  test('its transaction rolled back: no approval, and its workflow ends without making one', async () => {
    const attemptId = await insertAttempt(stack, taskId);
    const running = await startApi();
    const since = new Date(Date.now() - 1000);
    const answer = post(attemptId, 'HOLD-LONG: rolled back');
    const pid = await heldCommit();
    running.child.kill('SIGKILL');
    await stack.db.query('SELECT pg_terminate_backend($1)', [pid]); // as PostgreSQL's restart would: the session ends uncommitted
    expect(await answer).toBe('no answer');
    const [run] = await approvalRunsSince(since, 1);
    const id = run.workflowId.replace(/^approval:/, '');
    expect(await resultOf(id)).toBe('not-stored');
    expect(await approvalsOf(attemptId)).toEqual([]);
    expect(await eventsOf(id)).toBe(0);
  });

  test('its COMMIT landed after the kill: one approval, whose workflow runs its expiry timer', async () => {
    const attemptId = await insertAttempt(stack, taskId);
    const running = await startApi();
    const since = new Date(Date.now() - 1000);
    const answer = post(attemptId, 'HOLD: lands', new Date(Date.now() + 20_000).toISOString());
    await heldCommit();
    running.child.kill('SIGKILL'); // the server finishes the COMMIT on its own (3 s), with nobody to answer
    expect(await answer).toBe('no answer');
    const [row] = await eventually(async () => {
      const rows = await approvalsOf(attemptId);
      return rows.length > 0 ? rows : undefined;
    }, 20_000);
    expect(row.status).toBe('pending');
    const runs = await approvalRunsSince(since, 1);
    expect(runs).toEqual([{ workflowId: `approval:${row.id}`, status: 'RUNNING' }]);
    // its expiry timer runs: nobody answers, and it ends expired, once
    expect(await resultOf(row.id)).toBe('expired');
    expect(await approvalsOf(attemptId)).toEqual([{ id: row.id, status: 'expired' }]);
    expect((await stack.db.query("SELECT 1 FROM events WHERE type = 'approval.expired' AND data->>'approvalId' = $1", [row.id])).rowCount).toBe(1);
  });
});
