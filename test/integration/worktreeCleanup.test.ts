/**
 * Removing an attempt's worktree and branch (merge with cleanup, DELETE) with real git: what git refuses is reported
 * (cleanup false or failed, with the reason), never done while the branch or the worktree is still there, and a later
 * cleanup removes it once the cause is gone. Before, the removal ignored git's exit codes: a stale ref lock left the
 * branch and a locked worktree left its registration and branch, and both answers said done.
 */
import fs from 'node:fs';
import path from 'node:path';
import { addWorktreeFast } from '../../activities/git/fastWorktree';
import { removeWorktree } from '../../activities/git/removeWorktree';
import { pruneOrphanWorktrees } from '../../activities/git/worktreeJanitor';
import { logger, makeGitRepo } from '../support/harness';
import { attemptStackForFile, gitOk, gitOut } from '../support/attemptHelpers';

const h = attemptStackForFile();

const branchThere = (repo: string, branch: string) => gitOk(repo, 'rev-parse', '--verify', '--quiet', `refs/heads/${branch}`);
/** The worktree paths git has registered in `repo` (real paths, as git records them). */
const registered = (repo: string) =>
  gitOut(repo, 'worktree', 'list', '--porcelain')
    .split('\n')
    .filter((l) => l.startsWith('worktree '))
    .map((l) => l.slice('worktree '.length));

test("merge with cleanup past a stale lock of the attempt branch's ref: merged, cleanup false with REPOSITORY_LOCKED; a DELETE once it is gone removes both", async () => {
  const { repo, attemptId, branch, worktree } = await h.finishedAttempt('Merge, then clean up past a stale ref lock', 60_000);
  const head = gitOut(repo, 'rev-parse', branch);
  // a git killed while it updated the attempt branch
  const lock = path.join(repo, '.git', 'refs', 'heads', `${branch}.lock`);
  fs.writeFileSync(lock, '');

  const merged = await h.inject('POST', `/api/attempts/${attemptId}/merge`, { strategy: 'ff', cleanup: true });
  expect(merged.statusCode).toBe(200);
  expect(merged.json().data).toMatchObject({
    merged: true,
    commitSha: head,
    cleanup: false, // before: true, with the branch still there
    cleanupError: { code: 'REPOSITORY_LOCKED', details: { lockFile: lock, repository: repo } },
  });
  expect(merged.json().data.cleanupError.message).toContain(`remove ${lock}`);
  expect(gitOut(repo, 'rev-parse', 'main')).toBe(head); // the merge itself landed
  // nothing removed: the branch is there, and so is its worktree, for the next cleanup to find
  expect(branchThere(repo, branch)).toBe(true);
  expect(fs.existsSync(worktree)).toBe(true);
  const view = await h.attempt(attemptId);
  expect(view).toMatchObject({ merged: true, worktreePath: worktree, cleanupError: { code: 'REPOSITORY_LOCKED', details: { lockFile: lock } } });
  expect(view.cleanupError.message).toContain(`DELETE /api/attempts/${attemptId}`);

  fs.rmSync(lock);
  const del = await h.inject('DELETE', `/api/attempts/${attemptId}`);
  expect(del.statusCode).toBe(200);
  expect(del.json().data).toEqual({ deleted: true, attemptId, cleanup: 'done' });
  expect(branchThere(repo, branch)).toBe(false);
  expect(fs.existsSync(worktree)).toBe(false);
  expect(registered(repo)).toEqual([fs.realpathSync(repo)]);
}, 120_000);

test('DELETE of an attempt whose worktree is locked (git worktree lock): cleanup failed with WORKTREE_LOCKED and the reason, nothing removed; once unlocked the janitor removes it', async () => {
  const { repo, attemptId, branch, worktree } = await h.finishedAttempt('Delete a locked worktree', 60_000);
  gitOut(repo, 'worktree', 'lock', '--reason', 'kept for a demo', worktree);

  const del = await h.inject('DELETE', `/api/attempts/${attemptId}`);
  expect(del.statusCode).toBe(200);
  expect(del.json().data).toMatchObject({
    deleted: true,
    attemptId,
    cleanup: 'failed', // before: done, with the worktree's files gone and its registration and branch left
    cleanupErrors: [{ attemptId, code: 'WORKTREE_LOCKED', details: { worktreePath: worktree, repository: repo, reason: 'kept for a demo' } }],
  });
  const [error] = del.json().data.cleanupErrors;
  expect(error.message).toContain('kept for a demo');
  expect(error.message).toContain(`git -C ${repo} worktree unlock ${worktree}`);
  expect(fs.existsSync(path.join(worktree, 'src', 'added.txt'))).toBe(true);
  expect(registered(repo)).toContain(fs.realpathSync(worktree));
  expect(branchThere(repo, branch)).toBe(true);
  expect((await h.inject('GET', `/api/attempts/${attemptId}`)).statusCode).toBe(404);

  // the row is gone: the worktree is an orphan, which the worktree janitor of the host removes once it is unlocked
  gitOut(repo, 'worktree', 'unlock', worktree);
  const pass = await pruneOrphanWorktrees({ db: h.stack.db, config: h.stack.config, logger }, { graceMs: 0 });
  expect(pass.failed).toEqual([]);
  expect(pass.pruned).toMatchObject([{ attemptId, branch, branchDeleted: true }]);
  expect(fs.existsSync(worktree)).toBe(false);
  expect(registered(repo)).toEqual([fs.realpathSync(repo)]);
  expect(branchThere(repo, branch)).toBe(false);
}, 120_000);

test('DELETE of an attempt whose worktree and branch were already removed by hand: done', async () => {
  const { repo, attemptId, branch, worktree } = await h.finishedAttempt('Delete what is already gone', 60_000);
  gitOut(repo, 'worktree', 'remove', '--force', worktree);
  gitOut(repo, 'branch', '-D', branch);

  const del = await h.inject('DELETE', `/api/attempts/${attemptId}`);
  expect(del.statusCode).toBe(200);
  expect(del.json().data).toEqual({ deleted: true, attemptId, cleanup: 'done' });
  expect(registered(repo)).toEqual([fs.realpathSync(repo)]);
}, 120_000);

test("DELETE of a task whose attempt's branch is checked out in the user's own worktree: cleanup failed with CLEANUP_FAILED and git's message, the user's checkout untouched", async () => {
  const { repo, attemptId, branch, worktree } = await h.finishedAttempt('Delete while the user has the branch checked out', 60_000);
  const taskId = (await h.attempt(attemptId)).taskId as string;
  // the user looks at the attempt's work in a checkout of their own
  gitOut(repo, 'worktree', 'remove', '--force', worktree);
  const mine = `${repo}-review`;
  gitOut(repo, 'worktree', 'add', mine, branch);
  try {
    const del = await h.inject('DELETE', `/api/tasks/${taskId}`);
    expect(del.statusCode).toBe(200);
    expect(del.json().data).toMatchObject({
      deleted: true,
      taskId,
      cleanup: 'failed',
      cleanupErrors: [{ attemptId, code: 'CLEANUP_FAILED', details: { repository: repo, branch } }],
    });
    expect(del.json().data.cleanupErrors[0].message).toContain(`Cannot delete branch '${branch}' checked out at`);
    expect(branchThere(repo, branch)).toBe(true);
    expect(fs.existsSync(path.join(mine, 'src', 'added.txt'))).toBe(true); // the user's checkout is untouched
  } finally {
    fs.rmSync(mine, { recursive: true, force: true });
  }
}, 120_000);

test('a locked worktree that fastWorktree made under a symlinked path (git then lists it by that path, not its real one) is still found locked and kept', async () => {
  const repo = makeGitRepo();
  const real = fs.mkdtempSync(`${repo}-home-`);
  const link = `${repo}-link`;
  fs.symlinkSync(real, link);
  const worktree = path.join(link, 'worktrees', 'a1');
  fs.mkdirSync(path.dirname(worktree), { recursive: true });
  try {
    expect(await addWorktreeFast(repo, worktree, 'armada/task-t-attempt-1', gitOut(repo, 'rev-parse', 'main'))).toBe(true);
    gitOut(repo, 'worktree', 'lock', '--reason', 'on a removable disk', worktree);

    const removal = await removeWorktree({ db: h.stack.db }, { attemptId: null, repoPath: repo, worktreePath: worktree, branch: 'armada/task-t-attempt-1', deleteBranch: true });

    expect(removal).toMatchObject({ removed: false, error: { code: 'WORKTREE_LOCKED', details: { reason: 'on a removable disk' } } });
    expect(fs.existsSync(path.join(worktree, 'README.md'))).toBe(true);
    expect(branchThere(repo, 'armada/task-t-attempt-1')).toBe(true);
  } finally {
    for (const p of [repo, real, link]) fs.rmSync(p, { recursive: true, force: true });
  }
});

test('DELETE of a project of ten attempts (more than a delete handles at a time, DELETE_CONCURRENCY 8): one answer, cleanup done, every worktree and branch gone, the repository itself kept', async () => {
  const p = await h.project();
  const started = await Promise.all(Array.from({ length: 10 }, async (_, i) => h.start(await h.task(p.id, `One of ten, number ${i}`))));
  const attempts = await Promise.all(started.map(async (s) => h.until(s.attemptId, ['completed'], 90_000)));
  for (const a of attempts) expect(fs.existsSync(a.worktreePath)).toBe(true);

  const del = await h.inject('DELETE', `/api/projects/${p.id}`);
  expect(del.statusCode).toBe(200);
  expect(del.json().data).toMatchObject({ id: p.id, deleted: true, cleanup: 'done' });
  for (const a of attempts) {
    expect(fs.existsSync(a.worktreePath)).toBe(false);
    expect(branchThere(p.repo, a.branch)).toBe(false);
  }
  expect(registered(p.repo)).toEqual([fs.realpathSync(p.repo)]);
  expect(gitOut(p.repo, 'rev-parse', '--abbrev-ref', 'HEAD')).toBe('main');
  const rows = await h.stack.db.query('SELECT 1 FROM attempts WHERE id = ANY($1::text[])', [started.map((s) => s.attemptId)]);
  expect(rows.rowCount).toBe(0);
}, 180_000);
