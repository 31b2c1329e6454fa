/**
 * The last differences from the spec (issue 18): deletes of a task or project remove their attempts' worktrees and
 * branches at once; one timestamp form (`….000Z`) and compact JSON in the task list and the git-repos listing.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { eventually, startTestStack, type TestStack } from '../support/harness';
import { agentConfig, api, gitOut } from '../support/attemptHelpers';

let stack: TestStack;
let h: ReturnType<typeof api>;
let root: string; // filesystem.allowedPaths = [root]

beforeAll(async () => {
  root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'armada-spec-')));
  stack = await startTestStack({ services: ['task'], worker: true, file: agentConfig({ filesystem: { allowedPaths: [root] } }) });
  h = api(stack);
});
afterAll(async () => {
  await stack.close();
  fs.rmSync(root, { recursive: true, force: true });
});

const ISO_Z = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
const armadaBranches = (repo: string) => gitOut(repo, 'branch', '--list', 'armada/*');

describe('deletes remove the attempts’ worktrees and branches', () => {
  test('DELETE /api/tasks/:id removes its attempts’ worktrees and branches, not only at the janitor', async () => {
    const p = await h.project();
    const taskId = await h.task(p.id, 'Edit then delete the task');
    const first = await h.start(taskId);
    const a1 = await h.until(first.attemptId, ['completed', 'failed']);
    const second = await h.start(taskId);
    const a2 = await h.until(second.attemptId, ['completed', 'failed']);
    for (const a of [a1, a2]) expect(fs.existsSync(a.worktreePath)).toBe(true);
    expect(armadaBranches(p.repo)).toContain(a1.branch);

    const del = await h.inject('DELETE', `/api/tasks/${taskId}`);
    expect(del.statusCode).toBe(200);
    for (const a of [a1, a2]) expect(fs.existsSync(a.worktreePath)).toBe(false);
    expect(armadaBranches(p.repo)).toBe('');
    expect(del.json().data).toEqual({ deleted: true, taskId, cleanup: 'done' });
    expect(gitOut(p.repo, 'worktree', 'list')).not.toContain(first.attemptId);
    expect((await h.inject('GET', `/api/attempts/${first.attemptId}`)).statusCode).toBe(404);
    expect((await h.inject('DELETE', `/api/tasks/${taskId}`)).statusCode).toBe(404);
  });

  test('DELETE /api/projects/:id removes the worktrees and branches of all its tasks’ attempts, a running one too', async () => {
    const p = await h.project();
    const doneTask = await h.task(p.id, 'Finished work');
    const done = await h.until((await h.start(doneTask)).attemptId, ['completed', 'failed']);
    const runningTask = await h.task(p.id, 'SLEEP while the project is deleted');
    const running = await h.start(runningTask);
    // running, with its worktree made (the agent sleeps in it)
    const r = await eventually(async () => {
      const a = await h.attempt(running.attemptId);
      return a.status === 'running' && a.worktreePath && fs.existsSync(a.worktreePath) && a.processId ? a : undefined;
    }, 30_000, 100);

    const del = await h.inject('DELETE', `/api/projects/${p.id}`);
    expect(del.statusCode).toBe(200);
    expect(fs.existsSync(done.worktreePath)).toBe(false);
    expect(fs.existsSync(r.worktreePath)).toBe(false);
    expect(armadaBranches(p.repo)).toBe('');
    expect(del.json().data).toMatchObject({ id: p.id, deleted: true, deletedAt: expect.stringMatching(ISO_Z), cleanup: 'done' });
    expect((await h.inject('GET', `/api/tasks/${runningTask}`)).statusCode).toBe(404);
    expect((await h.inject('GET', `/api/projects/${p.id}`)).statusCode).toBe(404);
    // the cancelled attempt's workflow does not bring the worktree back
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(fs.existsSync(r.worktreePath)).toBe(false);
    expect(armadaBranches(p.repo)).toBe('');
  });

  test('POST /api/tasks/bulk/delete removes the tasks’ worktrees and branches too', async () => {
    const p = await h.project();
    const taskId = await h.task(p.id, 'Bulk deleted');
    const a = await h.until((await h.start(taskId)).attemptId, ['completed', 'failed']);
    expect(fs.existsSync(a.worktreePath)).toBe(true);
    const res = await h.inject('POST', '/api/tasks/bulk/delete', { taskIds: [taskId, 'no-such-task'] });
    expect(res.statusCode).toBe(200);
    expect(fs.existsSync(a.worktreePath)).toBe(false);
    expect(armadaBranches(p.repo)).toBe('');
    expect(res.json().data).toEqual({ deleted: 1, taskIds: [taskId], notFound: ['no-such-task'] });
  });
});

describe('one timestamp form and compact JSON', () => {
  test('GET /api/tasks: items are compact JSON (no `" : "`), timestamps end in .mmmZ, fields equal GET /api/tasks/:id', async () => {
    const p = await h.project();
    const created = await h.inject('POST', '/api/tasks', { projectId: p.id, title: 'Shaped', labels: ['a', 'b'], metadata: { nested: { n: 1, list: [1, 2] } } });
    expect(created.statusCode).toBe(201);
    const taskId = created.json().data.id as string;
    await h.task(p.id, 'Second');
    const res = await h.inject('GET', `/api/tasks?projectId=${p.id}`);
    expect(res.statusCode).toBe(200);
    expect(res.body).not.toContain('" : ');
    expect(res.body).not.toMatch(/\n/);
    expect(res.body).toContain('"metadata":{"nested":{"n":1,"list":[1,2]}}');
    const items = res.json().data as Record<string, unknown>[];
    expect(items).toHaveLength(2);
    for (const item of items) {
      expect(item.createdAt).toMatch(ISO_Z);
      expect(item.updatedAt).toMatch(ISO_Z);
    }
    // the same form as every other response: the list item is the API's task, field for field
    const single = (await h.inject('GET', `/api/tasks/${taskId}`)).json().data;
    const item = items.find((t) => t.id === taskId) as Record<string, unknown>;
    for (const [k, v] of Object.entries(item)) if (k !== 'metadata') expect([k, single[k]]).toEqual([k, v]);
    // the detail view adds repository, branch and worktreePath to metadata (spec)
    expect(single.metadata).toMatchObject(item.metadata as object);
    const other = await h.inject('GET', `/api/projects/${p.id}`);
    expect(other.body).not.toContain('" : ');
  });

  test('GET /api/filesystem/git-repos gives lastCommit.date in UTC .mmmZ, whatever the commit’s offset', async () => {
    const repo = path.join(root, 'offset-repo');
    fs.mkdirSync(repo);
    const env = {
      ...process.env,
      GIT_AUTHOR_NAME: 't',
      GIT_AUTHOR_EMAIL: 't@example.com',
      GIT_COMMITTER_NAME: 't',
      GIT_COMMITTER_EMAIL: 't@example.com',
      GIT_AUTHOR_DATE: '2026-01-02T03:04:05+02:00',
      GIT_COMMITTER_DATE: '2026-01-02T03:04:05+02:00',
    };
    execFileSync('git', ['init', '-q', '-b', 'main'], { cwd: repo, env });
    fs.writeFileSync(path.join(repo, 'f.txt'), '1');
    execFileSync('git', ['add', '-A'], { cwd: repo, env });
    execFileSync('git', ['commit', '-q', '-m', 'offset commit'], { cwd: repo, env });
    const res = await h.inject('GET', `/api/filesystem/git-repos?path=${encodeURIComponent(root)}`);
    expect(res.statusCode).toBe(200);
    expect(res.body).not.toContain('+00:00');
    expect(res.body).not.toContain('+02:00');
    const found = res.json().data.repositories.find((r: { path: string }) => r.path === repo);
    expect(found.lastCommit).toMatchObject({ message: 'offset commit', date: '2026-01-02T01:04:05.000Z' });
  });
});
