/** Test fixtures for features that hang off attempts: a project and task through the API, the attempt row inserted. */
import crypto from 'node:crypto';
import { makeGitRepo, type TestStack } from './harness';

export async function createProjectAndTask(
  stack: TestStack,
  name = `P-${crypto.randomBytes(4).toString('hex')}`,
  headers: Record<string, string> = {},
): Promise<{ projectId: string; taskId: string }> {
  const app = stack.app('task');
  const p = await app.inject({ method: 'POST', url: '/api/projects', headers, payload: { name, repository: { url: makeGitRepo() } } });
  if (p.statusCode !== 201) throw new Error(`project: ${p.statusCode} ${p.body}`);
  const projectId = p.json().data.id as string;
  const t = await app.inject({ method: 'POST', url: '/api/tasks', headers, payload: { projectId, title: 'Task for attempts' } });
  if (t.statusCode !== 201) throw new Error(`task: ${t.statusCode} ${t.body}`);
  return { projectId, taskId: t.json().data.id as string };
}

/** Inserts an attempt row (the attempt engine's table) for a task and returns its id. */
export async function insertAttempt(stack: TestStack, taskId: string, status = 'running'): Promise<string> {
  const id = crypto.randomUUID();
  await stack.db.query(
    `INSERT INTO attempts (id, task_id, number, llm, status, started_at)
     VALUES ($1, $2, COALESCE((SELECT max(number) FROM attempts WHERE task_id = $2), 0) + 1, 'test', $3, now())`,
    [id, taskId, status],
  );
  return id;
}
