/**
 * activities/git/gitLocks.ts against git itself: the lock file a refused write names is read from git's own message,
 * and lockStillThere finds a stale lock (the worktree's own index.lock included) and waits out one that goes.
 */
import fs from 'node:fs';
import path from 'node:path';
import { git } from '../../lib/git';
import { lockFileOf, lockStillThere } from '../../activities/git/gitLocks';
import { makeGitRepo } from '../support/harness';

let repo: string;
beforeAll(() => {
  repo = makeGitRepo();
});
afterAll(() => fs.rmSync(repo, { recursive: true, force: true }));

test("the lock file git names when it refuses a write (index, a branch's ref)", async () => {
  const index = path.join(repo, '.git', 'index.lock');
  fs.writeFileSync(index, '');
  const add = await git(repo, ['update-index', '--refresh']);
  fs.rmSync(index);
  expect(lockFileOf(new Error(add.stderr))).toBe(index);

  const ref = path.join(repo, '.git', 'refs', 'heads', 'main.lock');
  fs.writeFileSync(ref, '');
  const moved = await git(repo, ['update-ref', 'refs/heads/main', 'HEAD']);
  fs.rmSync(ref);
  expect(moved.code).not.toBe(0);
  expect(lockFileOf(new Error(moved.stderr))).toBe(ref);

  expect(lockFileOf(new Error('git merge failed: fatal: refusing to merge unrelated histories'))).toBeUndefined();
});

test("lockStillThere: a stale lock is named (a linked worktree's index.lock lives in .git/worktrees/<name>/)", async () => {
  const wt = `${repo}-wt`;
  expect((await git(repo, ['worktree', 'add', '-q', '-b', 'side', wt])).code).toBe(0);
  try {
    expect(await lockStillThere(wt, ['index', 'HEAD', 'refs/heads/side'], 0)).toBeUndefined();
    const lock = path.join(repo, '.git', 'worktrees', path.basename(wt), 'index.lock');
    fs.writeFileSync(lock, '');
    expect(await lockStillThere(wt, ['index', 'HEAD', 'refs/heads/side'], 300)).toBe(lock);
    // the main work tree's index is another one
    expect(await lockStillThere(repo, ['index'], 0)).toBeUndefined();
  } finally {
    fs.rmSync(wt, { recursive: true, force: true });
  }
});

test('lockStillThere waits for a lock that a running git lets go of', async () => {
  const lock = path.join(repo, '.git', 'index.lock');
  fs.writeFileSync(lock, '');
  setTimeout(() => fs.rmSync(lock), 300);
  const t0 = Date.now();
  expect(await lockStillThere(repo, ['index'], 5000)).toBeUndefined();
  expect(Date.now() - t0).toBeLessThan(4000);
});
