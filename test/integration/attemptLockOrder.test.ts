/**
 * One lock order for an attempt and its task: the attempt's row, then the task's (as starting a created attempt,
 * cancelling an attempt, undoing a start and the attempt workflow's projections take them). Deleting a task or a
 * project and cancelling a task took the task first and the attempts after, so a delete meeting a start of a created
 * attempt (or an attempt's end) deadlocked: PostgreSQL broke it after a second and one side answered 503. Here a
 * concurrent writer (a late projection of a finished attempt's workflow, a start of a created one) holds the
 * attempt's lock and then asks for the task's, as those writers do, while the request runs: both finish, neither is
 * a deadlock victim.
 */
import { Client } from 'pg';
import { eventually, makeGitRepo, startTestStack, type TestStack } from '../support/harness';

let stack: TestStack;

beforeAll(async () => {
  stack = await startTestStack({ services: ['task'] });
});
afterAll(async () => stack?.close());

async function createdAttempt(name: string, status: 'created' | 'completed' = 'created'): Promise<{ projectId: string; taskId: string; attemptId: string }> {
  const app = stack.app('task');
  const projectId = (await app.inject({ method: 'POST', url: '/api/projects', payload: { name, repository: { url: makeGitRepo() } } })).json().data.id;
  const taskId = (await app.inject({ method: 'POST', url: '/api/tasks', payload: { projectId, title: name } })).json().data.id;
  const created = await app.inject({ method: 'POST', url: '/api/attempts', payload: { taskId, llm: 'claude' } });
  expect(created.statusCode).toBe(200);
  const attemptId = created.json().data.id;
  // a finished attempt: a delete cancels nothing first, so its transaction is the first to lock the attempt's row
  if (status === 'completed') await stack.db.query("UPDATE attempts SET status = 'completed', started_at = now(), completed_at = now() WHERE id = $1", [attemptId]);
  return { projectId, taskId, attemptId };
}

/**
 * Runs the request while another transaction locks the attempt, waits until the request's transaction waits for a
 * lock, then locks the task (the writers' order) and commits. Returns the request's answer and whether the writer
 * got through.
 */
async function againstAWriter(attemptId: string, taskId: string, request: { method: 'DELETE' | 'POST'; url: string }) {
  const writer = new Client({ connectionString: stack.dbUrl });
  await writer.connect();
  try {
    await writer.query("SET deadlock_timeout = '20s'"); // were there a cycle, PostgreSQL would pick the request as its victim
    await writer.query('BEGIN');
    await writer.query('SELECT 1 FROM attempts WHERE id = $1 FOR UPDATE', [attemptId]);
    const pid = (await writer.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]?.pid;
    const answer = stack.app('task').inject(request).then((r) => r); // sent now, not when awaited
    await eventually(async () => {
      // asked on another connection: inside its transaction `writer` sees a snapshot of pg_stat_activity
      const { rows } = await stack.db.query("SELECT 1 FROM pg_stat_activity WHERE pid <> $1 AND wait_event_type = 'Lock'", [pid]);
      return rows.length > 0;
    });
    let writerError: string | undefined;
    await writer.query('SELECT 1 FROM tasks WHERE id = $1 FOR UPDATE', [taskId]).catch((err: Error) => {
      writerError = err.message;
    });
    await writer.query(writerError ? 'ROLLBACK' : 'COMMIT');
    return { res: await answer, writerError };
  } finally {
    await writer.end();
  }
}

test('DELETE /api/tasks/:id waits for a writer holding one of its attempts and then deletes, without a deadlock', async () => {
  const { taskId, attemptId } = await createdAttempt('LockOrderTask', 'completed');
  const { res, writerError } = await againstAWriter(attemptId, taskId, { method: 'DELETE', url: `/api/tasks/${taskId}` });
  expect(writerError).toBeUndefined();
  expect(res.statusCode).toBe(200);
  expect(res.json().data).toMatchObject({ deleted: true, taskId });
  expect((await stack.db.query('SELECT 1 FROM attempts WHERE id = $1', [attemptId])).rowCount).toBe(0);
}, 60_000);

test('DELETE /api/projects/:id the same', async () => {
  const { projectId, taskId, attemptId } = await createdAttempt('LockOrderProject', 'completed');
  const { res, writerError } = await againstAWriter(attemptId, taskId, { method: 'DELETE', url: `/api/projects/${projectId}` });
  expect(writerError).toBeUndefined();
  expect(res.statusCode).toBe(200);
  expect((await stack.db.query('SELECT 1 FROM tasks WHERE id = $1', [taskId])).rowCount).toBe(0);
}, 60_000);

test('POST /api/tasks/:id/cancel the same: the attempt and the task end cancelled', async () => {
  const { taskId, attemptId } = await createdAttempt('LockOrderCancel');
  const { res, writerError } = await againstAWriter(attemptId, taskId, { method: 'POST', url: `/api/tasks/${taskId}/cancel` });
  expect(writerError).toBeUndefined();
  expect(res.statusCode).toBe(200);
  expect((await stack.db.query('SELECT status FROM attempts WHERE id = $1', [attemptId])).rows[0]).toEqual({ status: 'cancelled' });
  expect((await stack.db.query('SELECT status FROM tasks WHERE id = $1', [taskId])).rows[0]).toEqual({ status: 'cancelled' });
}, 60_000);
