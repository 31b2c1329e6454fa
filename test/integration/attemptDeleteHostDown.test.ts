/**
 * DELETE /api/attempts/:id while the attempt's host has no worker: the answer does not wait for the host (bounded by
 * attempts.deleteWaitMs), the attempt is gone at once, and its worktree and branch are removed when the host is back.
 * The next attempt of that task never gets the deleted one's number, so never its branch.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { hostQueue } from '../../lib/temporal/queues';
import type { RunningWorkers } from '../../workers/createWorker';
import { gitOut } from '../support/attemptHelpers';
import { eventually, makeGitRepo, startStackWorkers, startTestStack, type TestStack } from '../support/harness';

let stack: TestStack;
let restarted: RunningWorkers | undefined;

beforeAll(async () => {
  stack = await startTestStack({ services: ['task'], worker: true, file: { attempts: { deleteWaitMs: 1500 } } });
});
afterAll(async () => {
  await restarted?.stop();
  await stack.close();
});

test('a host without a worker: 200 with cleanup pending in about deleteWaitMs, then removed once the worker is back', async () => {
  const app = stack.app('task');
  const repo = makeGitRepo();
  const projectId = (await app.inject({ method: 'POST', url: '/api/projects', payload: { name: 'HostDown', repository: { url: repo } } })).json().data.id;
  const taskId = (await app.inject({ method: 'POST', url: '/api/tasks', payload: { projectId, title: 'host down' } })).json().data.id;
  // an attempt that ran on this host and finished: its worktree and branch exist (as prepareWorktree leaves them)
  const attemptId = 'att-host-down';
  const branch = `armada/task-${taskId}-attempt-1`;
  const worktree = path.join(stack.config.home, 'worktrees', attemptId);
  execFileSync('git', ['worktree', 'add', '-b', branch, worktree, 'main'], { cwd: repo, stdio: 'ignore' });
  await stack.db.query(
    `INSERT INTO attempts (id, task_id, number, llm, status, branch, base_branch, worktree_path, host_queue, started_at, completed_at)
     VALUES ($1, $2, 1, 'claude', 'completed', $3, 'main', $4, $5, now(), now())`,
    [attemptId, taskId, branch, worktree, hostQueue(stack.config.temporal.taskQueue)],
  );

  await stack.workers?.stop();
  const t0 = Date.now();
  const del = await app.inject({ method: 'DELETE', url: `/api/attempts/${attemptId}` });
  const waited = Date.now() - t0;
  expect(del.statusCode).toBe(200);
  expect(del.json().data).toEqual({ deleted: true, attemptId, cleanup: 'pending' });
  expect(waited).toBeGreaterThanOrEqual(1400);
  expect(waited).toBeLessThan(10_000);
  expect((await app.inject({ method: 'GET', url: `/api/attempts/${attemptId}` })).statusCode).toBe(404);
  expect(fs.existsSync(worktree)).toBe(true); // nobody on the host yet

  restarted = await startStackWorkers(stack);
  await eventually(async () => !fs.existsSync(worktree) && gitOut(repo, 'branch', '--list', branch) === '', 40_000, 250);
  expect(gitOut(repo, 'branch', '--list', 'main')).toContain('main');
}, 90_000);

test("a deleted attempt's number and branch are never given to the next attempt of its task", async () => {
  const app = stack.app('task');
  const projectId = (await app.inject({ method: 'POST', url: '/api/projects', payload: { name: 'Numbers', repository: { url: makeGitRepo() } } })).json().data.id;
  const taskId = (await app.inject({ method: 'POST', url: '/api/tasks', payload: { projectId, title: 'numbers' } })).json().data.id;
  const create = async () => {
    const r = await app.inject({ method: 'POST', url: '/api/attempts', payload: { taskId, llm: 'claude' } });
    expect(r.statusCode).toBe(200);
    return (await stack.db.query<{ id: string; number: number; branch: string }>('SELECT id, number, branch FROM attempts WHERE id = $1', [r.json().data.id])).rows[0] as {
      id: string;
      number: number;
      branch: string;
    };
  };
  const first = await create();
  const second = await create();
  expect([first.number, second.number]).toEqual([1, 2]);
  expect((await app.inject({ method: 'DELETE', url: `/api/attempts/${second.id}` })).statusCode).toBe(200);
  const third = await create();
  expect(third.number).toBe(3);
  expect(third.branch).toBe(`armada/task-${taskId}-attempt-3`);
  expect(third.branch).not.toBe(second.branch);
});
