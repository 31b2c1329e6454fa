/**
 * The task status rule when attempts end (lib/attempts/projections.ts): two attempts of one task ending at the same
 * moment both count, so the task never stays in_progress with no attempt running; and a finish writes the change
 * statistics whatever the attempt's state.
 */
import crypto from 'node:crypto';
import { recordAttemptFinished, resumeAttemptIfPresent } from '../../lib/attempts/projections';
import { createTestDatabase } from '../support/harness';

let database: Awaited<ReturnType<typeof createTestDatabase>>;
beforeAll(async () => {
  database = await createTestDatabase();
});
afterAll(async () => {
  await database.drop();
});

async function taskWithRunningAttempts(n: number): Promise<{ taskId: string; attempts: string[] }> {
  const projectId = crypto.randomUUID();
  const taskId = crypto.randomUUID();
  await database.pool.query(`INSERT INTO projects (id, name, repo_url) VALUES ($1, $2, '/tmp/x')`, [projectId, `p-${projectId}`]);
  await database.pool.query(`INSERT INTO tasks (id, project_id, title, status) VALUES ($1, $2, 'settle', 'in_progress')`, [taskId, projectId]);
  const attempts: string[] = [];
  for (let i = 1; i <= n; i++) {
    const id = crypto.randomUUID();
    await database.pool.query(`INSERT INTO attempts (id, task_id, number, llm, status, branch, started_at) VALUES ($1, $2, $3, 'test', 'running', $4, now())`, [id, taskId, i, `b-${id}`]);
    attempts.push(id);
  }
  return { taskId, attempts };
}

const statusOf = async (taskId: string) => (await database.pool.query<{ status: string }>('SELECT status FROM tasks WHERE id = $1', [taskId])).rows[0]?.status;

describe('settling a task when its attempts end', () => {
  test('two attempts ending at once, 20 rounds: the task always moves (review when one completed, failed when both failed)', async () => {
    for (let round = 0; round < 20; round++) {
      const both = await taskWithRunningAttempts(2);
      await Promise.all(both.attempts.map((id, i) => recordAttemptFinished(database.pool, id, i === 0 ? 'completed' : 'failed', i === 0 ? null : 'boom', '')));
      expect(await statusOf(both.taskId)).toBe('review');
      const failed = await taskWithRunningAttempts(2);
      await Promise.all(failed.attempts.map((id) => recordAttemptFinished(database.pool, id, 'failed', 'boom', '')));
      expect(await statusOf(failed.taskId)).toBe('failed');
    }
  });

  test('the outcome is written once; statistics are written whatever the state; events name the outcome', async () => {
    const { taskId, attempts } = await taskWithRunningAttempts(1);
    const id = attempts[0] as string;
    const changes = { filesChanged: 2, filesCreated: 1, filesModified: 1, filesDeleted: 0, linesAdded: 5, linesRemoved: 1, files: ['a', 'b'] };
    const a = await recordAttemptFinished(database.pool, id, 'completed', null, 'done', changes);
    expect(a).toMatchObject({ id, status: 'completed', summary: 'done', files_changed: 2, lines_added: 5, output_changes: ['a', 'b'] });
    expect(await statusOf(taskId)).toBe('review');
    // a second finish (a retried activity) changes nothing but the statistics it carries
    expect(await recordAttemptFinished(database.pool, id, 'failed', 'late', '', { ...changes, linesAdded: 9 })).toBeUndefined();
    const { rows } = await database.pool.query('SELECT status, error, lines_added FROM attempts WHERE id = $1', [id]);
    expect(rows[0]).toEqual({ status: 'completed', error: null, lines_added: 9 });
    const ev = await database.pool.query<{ type: string }>(`SELECT type FROM events WHERE $1 = ANY (topics) ORDER BY seq`, [`attempt:${id}`]);
    expect(ev.rows.map((r) => r.type)).toEqual(['attempt.completed']);
    const tev = await database.pool.query<{ type: string; data: { status: string; previousStatus: string } }>(`SELECT type, data FROM events WHERE $1 = ANY (topics) AND type LIKE 'task.%' ORDER BY seq`, [`task:${taskId}`]);
    expect(tev.rows.map((r) => [r.type, r.data.previousStatus, r.data.status])).toEqual([['task.status_changed', 'in_progress', 'review']]);
  });
});

describe("a follow-up's start (resumeAttemptIfPresent)", () => {
  test('a finished attempt runs again (its task in_progress, attempt.started with followUp); a running one is left as it is; a deleted one answers false', async () => {
    const { taskId, attempts } = await taskWithRunningAttempts(1);
    const id = attempts[0] as string;
    await recordAttemptFinished(database.pool, id, 'completed', null, 'done');
    expect(await statusOf(taskId)).toBe('review');
    expect(await resumeAttemptIfPresent(database.pool, id)).toBe(true);
    const { rows } = await database.pool.query('SELECT status, completed_at FROM attempts WHERE id = $1', [id]);
    expect(rows[0]).toEqual({ status: 'running', completed_at: null });
    expect(await statusOf(taskId)).toBe('in_progress');
    const ev = await database.pool.query<{ type: string; data: { followUp?: boolean } }>(`SELECT type, data FROM events WHERE $1 = ANY (topics) ORDER BY seq`, [`attempt:${id}`]);
    expect(ev.rows.map((r) => [r.type, r.data.followUp ?? null])).toEqual([
      ['attempt.completed', null],
      ['attempt.started', true],
    ]);
    // already running (a retried activity): true, nothing written again
    expect(await resumeAttemptIfPresent(database.pool, id)).toBe(true);
    expect((await database.pool.query(`SELECT count(*)::int AS n FROM events WHERE $1 = ANY (topics)`, [`attempt:${id}`])).rows[0].n).toBe(2);
    // deleted with its task
    await database.pool.query('DELETE FROM tasks WHERE id = $1', [taskId]);
    expect(await resumeAttemptIfPresent(database.pool, id)).toBe(false);
  });
});
