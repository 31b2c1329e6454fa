/**
 * activities/git/gitLocks.ts against git itself: the lock file a refused write names is read from git's own message,
 * and only from it (not from a branch or path that merely contains "lock", nor from a worktree locked on purpose);
 * withRepoLock retries only such a refusal; lockStillThere finds a stale lock (the worktree's own index.lock
 * included) and waits out one that goes.
 */
import fs from 'node:fs';
import path from 'node:path';
import { git, gitOrThrow } from '../../lib/git';
import { lockFileOf, lockStillThere } from '../../activities/git/gitLocks';
import { withRepoLock } from '../../activities/git/repoLock';
import { makeGitRepo } from '../support/harness';

let repo: string;
beforeAll(() => {
  repo = makeGitRepo();
});
afterAll(() => fs.rmSync(repo, { recursive: true, force: true }));

test("the lock file git names when it refuses a write (index, a branch's ref)", async () => {
  const index = path.join(repo, '.git', 'index.lock');
  fs.writeFileSync(index, '');
  // an add must write the index, so git refuses it at once (`update-index --refresh`, used before, writes only when
  // an entry is racily clean, which depends on the seconds the repository's files and index were written in: ci43c)
  fs.writeFileSync(path.join(repo, 'added.txt'), 'x\n');
  const add = await git(repo, ['add', 'added.txt']);
  fs.rmSync(index);
  fs.rmSync(path.join(repo, 'added.txt'));
  expect(add.code).not.toBe(0);
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

/** git's stderr of `args` in `cwd`, which must fail. */
async function refusal(cwd: string, args: string[]): Promise<string> {
  const r = await git(cwd, args);
  expect(r.code).not.toBe(0);
  return r.stderr;
}

test('git lock refusals of a branch delete (its ref lock, packed-refs.lock), as stderr and through gitOrThrow', async () => {
  expect((await git(repo, ['branch', 'doomed'])).code).toBe(0);
  const ref = path.join(repo, '.git', 'refs', 'heads', 'doomed.lock');
  fs.writeFileSync(ref, '');
  const byRef = await refusal(repo, ['branch', '-D', 'doomed']);
  expect(byRef).toContain("error: cannot lock ref 'refs/heads/doomed': Unable to create");
  expect(lockFileOf(byRef)).toBe(ref);
  const thrown = await gitOrThrow(repo, ['branch', '-D', 'doomed']).catch((e: Error) => e);
  expect(lockFileOf(thrown)).toBe(ref);
  fs.rmSync(ref);

  const packed = path.join(repo, '.git', 'packed-refs.lock');
  fs.writeFileSync(packed, '');
  const byPacked = await refusal(repo, ['branch', '-D', 'doomed']);
  expect(byPacked).toContain('error: could not delete reference refs/heads/doomed: Unable to create');
  expect(lockFileOf(byPacked)).toBe(packed);
  fs.rmSync(packed);
  expect((await git(repo, ['branch', '-D', 'doomed'])).code).toBe(0);
});

describe('not lock contention, though the message says "lock"', () => {
  let other: string;
  let parent: string;
  let wt: string;
  beforeAll(async () => {
    // a repository and a worktree under paths with ".lock" in them, and branches named like locks
    parent = fs.mkdtempSync(path.join(path.dirname(repo), 'armada-cache.lock.d-'));
    other = path.join(parent, 'repo');
    fs.renameSync(makeGitRepo(), other);
    wt = path.join(parent, 'unlock.lock.wt');
    expect((await git(other, ['worktree', 'add', '-q', '-b', 'feature/unlock', wt])).code).toBe(0);
  });
  afterAll(() => fs.rmSync(parent, { recursive: true, force: true }));

  test('real git refusals naming such branches and paths', async () => {
    const samples = [
      // checked out elsewhere: "error: Cannot delete branch 'feature/unlock' checked out at '…/unlock.lock.wt'"
      await refusal(other, ['branch', '-D', 'feature/unlock']),
      // "error: branch 'fix/locked-door' not found."
      await refusal(other, ['branch', '-D', 'fix/locked-door']),
      // "fatal: '…/armada-cache.lock.d-…/nowhere.lock' is not a working tree"
      await refusal(other, ['worktree', 'remove', '--force', path.join(parent, 'nowhere.lock')]),
    ];
    // a ref git cannot lock because of another ref, not a lock file: "error: cannot lock ref 'refs/heads/feature/unlock/x':
    // 'refs/heads/feature/unlock' exists; cannot create 'refs/heads/feature/unlock/x'"
    samples.push(await refusal(other, ['branch', 'feature/unlock/x']));
    // a worktree locked on purpose: "fatal: cannot remove a locked working tree, lock reason: …"
    expect((await git(other, ['worktree', 'lock', '--reason', 'Unable to create lock', wt])).code).toBe(0);
    samples.push(await refusal(other, ['worktree', 'remove', '--force', wt]));
    expect((await git(other, ['worktree', 'unlock', wt])).code).toBe(0);
    // a hook that prints git's lock message: git passes it on as the hook's output, not as its own refusal
    const hook = path.join(other, '.git', 'hooks', 'pre-commit');
    fs.writeFileSync(hook, `#!/bin/sh\necho "Unable to create '${path.join(other, '.git', 'index.lock')}': File exists." >&2\nexit 1\n`, { mode: 0o755 });
    samples.push(await refusal(other, ['-c', 'user.name=t', '-c', 'user.email=t@example.com', 'commit', '--allow-empty', '-m', 'x']));
    fs.rmSync(hook);
    // git could not create the lock file for a reason other than another git holding it (as printed by lockfile.c;
    // not reproducible as root, which the tests may run as)
    samples.push(`fatal: Unable to create '${path.join(other, '.git', 'index.lock')}': Permission denied`);
    for (const stderr of samples) {
      expect({ stderr, lockFile: lockFileOf(stderr) }).toEqual({ stderr, lockFile: undefined });
      expect(lockFileOf(new Error(`git branch failed: ${stderr.trim()}`))).toBeUndefined();
    }
  });

  test('withRepoLock gives such a failure back at once instead of retrying it as a held lock', async () => {
    for (const args of [
      ['branch', '-D', 'fix/locked-door'],
      ['branch', '-D', 'feature/unlock'],
    ]) {
      let calls = 0;
      const err = await withRepoLock(other, () => {
        calls++;
        return gitOrThrow(other, args);
      }).catch((e: Error) => e);
      expect(err).toBeInstanceOf(Error);
      expect({ args, calls }).toEqual({ args, calls: 1 }); // before: 11 calls over 5.5 s
    }
  });
});

test('withRepoLock retries a git write refused by a lock file until the lock goes', async () => {
  expect((await git(repo, ['branch', 'held'])).code).toBe(0);
  const ref = path.join(repo, '.git', 'refs', 'heads', 'held.lock');
  fs.writeFileSync(ref, '');
  let calls = 0;
  const removed = withRepoLock(repo, () => {
    calls++;
    if (calls === 2) fs.rmSync(ref); // the other git lets go of it
    return gitOrThrow(repo, ['branch', '-D', 'held']);
  });
  await expect(removed).resolves.toContain('Deleted branch held');
  expect(calls).toBe(2); // refused once by the lock, then done
});
