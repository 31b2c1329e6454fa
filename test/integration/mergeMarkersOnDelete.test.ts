/**
 * A merge leaves a marker ref `refs/armada/merges/<attemptId>/<branch head>` in the project's repository
 * (activities/git/mergeMarkers.ts). Deleting the merged attempt, its task or its project removes that attempt's
 * markers with its worktree and branch, and leaves every other attempt's refs alone; a lock file on a marker is a
 * REPOSITORY_LOCKED cleanup error naming it and the command that removes what was kept. Before, a DELETE removed the
 * worktree and branch but never the markers (only a merge's own cleanup did), so every merged-then-deleted attempt
 * left its refs in the user's repository for good. An attempt whose row went without its removal (a host that did not
 * answer, a crash) has them removed by the worktree janitor with its worktree and branch.
 */
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { removeWorktree } from '../../activities/git/removeWorktree';
import { pruneOrphanWorktrees } from '../../activities/git/worktreeJanitor';
import { logger, startTestStack, type TestStack } from '../support/harness';
import { agentConfig, api, gitOut } from '../support/attemptHelpers';

let stack: TestStack;
let h: ReturnType<typeof api>;
beforeAll(async () => {
  stack = await startTestStack({ services: ['task'], worker: true, file: agentConfig() });
  h = api(stack);
});
afterAll(async () => {
  await stack.close();
});

interface Finished {
  taskId: string;
  attemptId: string;
  branch: string;
  worktree: string;
}

async function finishedAttempt(projectId: string, title: string): Promise<Finished> {
  const taskId = await h.task(projectId, title);
  const { attemptId } = await h.start(taskId);
  const a = await h.until(attemptId, ['completed'], 60_000);
  return { taskId, attemptId, branch: a.branch as string, worktree: a.worktreePath as string };
}

/** Merged without cleanup (no-ff: two attempts that made the same edit both merge), so its branch and marker stay. */
async function merge(a: Finished): Promise<void> {
  const r = await h.inject('POST', `/api/attempts/${a.attemptId}/merge`, { strategy: 'no-ff', cleanup: false });
  expect(r.statusCode).toBe(200);
  expect(r.json().data).toMatchObject({ merged: true });
}

/** Every ref of the repository, from git itself. */
const refs = (repo: string) => gitOut(repo, 'for-each-ref', '--format=%(refname)').split('\n').filter(Boolean);
/** The refs of `a` in the repository: its branch and anything named after its id. */
const refsOf = (repo: string, a: Finished) => refs(repo).filter((r) => r.includes(a.attemptId) || r === `refs/heads/${a.branch}`);
const markersOf = (repo: string, a: Finished) => refs(repo).filter((r) => r.startsWith(`refs/armada/merges/${a.attemptId}/`));

test("DELETE of a merged attempt removes its merge marker with its branch; another merged attempt's refs stay", async () => {
  const p = await h.project();
  const gone = await finishedAttempt(p.id, 'Merged, then deleted');
  const kept = await finishedAttempt(p.id, 'Merged, and kept');
  await merge(gone);
  await merge(kept);
  expect(markersOf(p.repo, gone)).toHaveLength(1);
  expect(markersOf(p.repo, kept)).toHaveLength(1);
  const keptRefs = refsOf(p.repo, kept);

  const del = await h.inject('DELETE', `/api/attempts/${gone.attemptId}`);
  expect(del.statusCode).toBe(200);
  expect(del.json().data).toEqual({ deleted: true, attemptId: gone.attemptId, cleanup: 'done' });
  expect(refsOf(p.repo, gone)).toEqual([]); // before: [refs/armada/merges/<id>/<head>]
  expect(fs.existsSync(gone.worktree)).toBe(false);
  expect(refsOf(p.repo, kept)).toEqual(keptRefs);
  expect(fs.existsSync(kept.worktree)).toBe(true);

  // a repeat (a retried activity, the attempt's own workflow finding its row gone) converges: nothing left, nothing else touched
  const again = await removeWorktree(
    { db: stack.db },
    { attemptId: null, mergeMarkersOf: gone.attemptId, repoPath: p.repo, worktreePath: gone.worktree, branch: gone.branch, deleteBranch: true },
  );
  expect(again).toEqual({ removed: true, error: null });
  expect(refsOf(p.repo, gone)).toEqual([]);
  expect(refsOf(p.repo, kept)).toEqual(keptRefs);
}, 180_000);

test("DELETE of a merged attempt's task, then of its project (a repository used in place): each removes its attempts' markers, the other task's stay until then", async () => {
  const p = await h.project();
  const gone = await finishedAttempt(p.id, 'Merged, then its task deleted');
  const kept = await finishedAttempt(p.id, 'Merged, its task kept');
  await merge(gone);
  await merge(kept);
  const keptRefs = refsOf(p.repo, kept);
  expect(markersOf(p.repo, kept)).toHaveLength(1);

  const delTask = await h.inject('DELETE', `/api/tasks/${gone.taskId}`);
  expect(delTask.statusCode).toBe(200);
  expect(delTask.json().data).toEqual({ deleted: true, taskId: gone.taskId, cleanup: 'done' });
  expect(refsOf(p.repo, gone)).toEqual([]);
  expect(refsOf(p.repo, kept)).toEqual(keptRefs);

  const delProject = await h.inject('DELETE', `/api/projects/${p.id}`);
  expect(delProject.statusCode).toBe(200);
  expect(delProject.json().data).toMatchObject({ id: p.id, deleted: true, cleanup: 'done' });
  expect(refsOf(p.repo, kept)).toEqual([]);
  expect(refs(p.repo).filter((r) => r.startsWith('refs/armada/'))).toEqual([]);
  expect(gitOut(p.repo, 'rev-parse', '--abbrev-ref', 'HEAD')).toBe('main'); // the user's repository itself stays
}, 180_000);

test('a stale lock on a merge marker: the DELETE answers cleanup failed with REPOSITORY_LOCKED naming it and how to remove the marker; once it is gone that command removes it', async () => {
  const p = await h.project();
  const a = await finishedAttempt(p.id, 'Merged, deleted past a marker lock');
  await merge(a);
  const [marker] = markersOf(p.repo, a);
  const lock = path.join(p.repo, '.git', `${marker}.lock`);
  fs.writeFileSync(lock, '');

  const del = await h.inject('DELETE', `/api/attempts/${a.attemptId}`);
  expect(del.statusCode).toBe(200);
  expect(del.json().data).toMatchObject({
    deleted: true,
    attemptId: a.attemptId,
    cleanup: 'failed',
    cleanupErrors: [{ attemptId: a.attemptId, code: 'REPOSITORY_LOCKED', details: { lockFile: lock, repository: p.repo } }],
  });
  const message = del.json().data.cleanupErrors[0].message as string;
  expect(message).toContain(`remove ${lock}`);
  expect(message).toContain(`refs/armada/merges/${a.attemptId}/`);
  expect(markersOf(p.repo, a)).toEqual([marker]); // kept, as the answer says

  fs.rmSync(lock);
  const command = /delete them: (.+)\. Kept:/.exec(message)?.[1];
  expect(command).toBeDefined();
  execFileSync('bash', ['-c', command as string], { stdio: 'ignore' });
  expect(refsOf(p.repo, a)).toEqual([]);
}, 180_000);

test("a merged attempt whose row went without its removal (a delete whose host did not answer, a crash): the worktree janitor removes its markers with its worktree and branch; another attempt's stay", async () => {
  const p = await h.project();
  const gone = await finishedAttempt(p.id, 'Merged, its row deleted behind the API');
  const kept = await finishedAttempt(p.id, 'Merged, kept beside it');
  await merge(gone);
  await merge(kept);
  const keptRefs = refsOf(p.repo, kept);
  await stack.db.query('DELETE FROM tasks WHERE id = $1', [gone.taskId]); // cascades to the attempt row

  const pass = await pruneOrphanWorktrees({ db: stack.db, config: stack.config, logger }, { graceMs: 0 });
  expect(pass.failed).toEqual([]);
  expect(pass.pruned).toMatchObject([{ attemptId: gone.attemptId, branch: gone.branch, branchDeleted: true }]);
  expect(fs.existsSync(gone.worktree)).toBe(false);
  expect(refsOf(p.repo, gone)).toEqual([]); // before: the marker stayed
  expect(refsOf(p.repo, kept)).toEqual(keptRefs);
}, 180_000);
