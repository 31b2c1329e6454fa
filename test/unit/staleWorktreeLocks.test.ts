/**
 * activities/git/staleWorktreeLocks.ts on real lock files of a linked work tree: the index.lock a `git commit -a`
 * killed with -9 left is removed once it is old enough and nobody works in the worktree; a young lock, a process
 * working in the worktree, or one holding the lock open keeps it; the project repository's own locks are never touched.
 * The same rule in the reset before a lost run's retry (activities/git/resetWorktree.ts): a running git's lock refuses
 * the reset, the lock of that git killed -9 is removed and the worktree reset.
 */
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { resetWorktree } from '../../activities/git/resetWorktree';
import { removeStaleWorktreeLocks, STALE_LOCK_AGE_MS } from '../../activities/git/staleWorktreeLocks';
import { indexLockOfKilledGit, indexLockOfRunningGit } from '../support/killedGitLock';
import { makeGitRepo } from '../support/harness';

let repo: string;
let worktree: string;
beforeAll(() => {
  repo = makeGitRepo({ 'README.md': '# test\n' });
  worktree = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'armada-stale-lock-')), 'wt');
  execFileSync('git', ['worktree', 'add', '-q', '-b', 'attempt', worktree], { cwd: repo, stdio: 'pipe' });
});
afterAll(() => {
  fs.rmSync(repo, { recursive: true, force: true });
  fs.rmSync(path.dirname(worktree), { recursive: true, force: true });
});

/** A process working in `cwd` (and holding `open` open), once it is ready; killed by the returned function. */
async function holder(cwd: string, open?: string) {
  const opening = open ? `const fd = require('fs').openSync(${JSON.stringify(open)}, 'r');` : 'const fd = 0;';
  const p = spawn(process.execPath, ['-e', `${opening} console.log('ready'); setInterval(() => fd, 1000);`], { cwd, stdio: ['ignore', 'pipe', 'ignore'] });
  const exited = new Promise((resolve) => p.once('exit', resolve));
  await new Promise((resolve) => p.stdout.once('data', resolve));
  return async () => {
    p.kill('SIGKILL');
    await exited;
  };
}

test('the index.lock of a git killed -9: kept while young or held, removed once nobody can hold it', async () => {
  const lock = await indexLockOfKilledGit(worktree, 'README.md');
  expect(fs.existsSync(lock)).toBe(true);
  // young: a git may still be letting go of it
  expect(removeStaleWorktreeLocks(worktree, fs.statSync(lock).mtimeMs + 1000)).toMatchObject([{ lockFile: lock, removed: false }]);
  expect(fs.existsSync(lock)).toBe(true);

  const later = Date.now() + STALE_LOCK_AGE_MS + 1000;
  // a process working in the worktree (in a subdirectory of it) may be the git that holds it
  fs.mkdirSync(path.join(worktree, 'sub'), { recursive: true });
  let stop = await holder(path.join(worktree, 'sub'));
  expect(removeStaleWorktreeLocks(worktree, later)).toMatchObject([{ lockFile: lock, removed: false, why: expect.stringMatching(/works in the worktree/) }]);
  await stop();
  // one elsewhere with the lock file open
  stop = await holder(os.tmpdir(), lock);
  expect(removeStaleWorktreeLocks(worktree, later)).toMatchObject([{ lockFile: lock, removed: false, why: expect.stringMatching(/has .*index\.lock open/) }]);
  await stop();
  expect(fs.existsSync(lock)).toBe(true);

  // nobody: removed, and git commits in the worktree again
  expect(removeStaleWorktreeLocks(worktree, later)).toMatchObject([{ lockFile: lock, removed: true, why: expect.stringMatching(/no process works in the worktree/) }]);
  expect(fs.existsSync(lock)).toBe(false);
  execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.com', 'commit', '-qam', 'after the lock'], { cwd: worktree, stdio: 'pipe' });
  expect(fs.readFileSync(path.join(worktree, 'README.md'), 'utf8')).toBe('# test\nedited before the kill\n');
  expect(execFileSync('git', ['status', '--porcelain'], { cwd: worktree, encoding: 'utf8' })).toBe('');
});

test("the reset before a lost run's retry: a running git's lock is left and the reset refused (retried); that git killed -9, its lock is removed, said, and the worktree reset", async () => {
  const readme = path.join(worktree, 'README.md');
  const committed = execFileSync('git', ['show', 'HEAD:README.md'], { cwd: worktree, encoding: 'utf8' });
  const running = await indexLockOfRunningGit(worktree, 'README.md');
  const said: string[] = [];
  try {
    // old enough to be stale by its age: only its holder keeps it
    const aged = new Date(Date.now() - STALE_LOCK_AGE_MS - 5000);
    fs.utimesSync(running.lock, aged, aged);
    const refused = await resetWorktree(worktree, (m) => said.push(m)).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(refused).toMatchObject({ type: 'WorktreeLocked', nonRetryable: false, message: expect.stringMatching(/index\.lock exists \(left in place: process \d+ works in the worktree\), so the agent was not started/) });
    expect(fs.existsSync(running.lock)).toBe(true);
    expect(said).toEqual([]);
    expect(fs.readFileSync(readme, 'utf8')).not.toBe(committed); // nothing reset under the running git

    await running.kill();
    fs.utimesSync(running.lock, aged, aged);
    await resetWorktree(worktree, (m) => said.push(m));
  } finally {
    await running.kill();
  }
  expect(fs.existsSync(running.lock)).toBe(false);
  expect(said).toEqual([expect.stringMatching(/^removed the stale git lock file .*index\.lock: it was \d+ s old and no process works in the worktree or has it open/)]);
  expect(fs.readFileSync(readme, 'utf8')).toBe(committed); // the lost run's edit discarded
  expect(execFileSync('git', ['status', '--porcelain'], { cwd: worktree, encoding: 'utf8' })).toBe('');
});

test("the project repository's own lock, or a .git pointing at it, is never removed", () => {
  const repoLock = path.join(repo, '.git', 'index.lock');
  fs.writeFileSync(repoLock, '');
  const old = new Date(Date.now() - 60_000);
  fs.utimesSync(repoLock, old, old);
  try {
    expect(removeStaleWorktreeLocks(repo)).toEqual([]); // not a linked work tree
    const other = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-stale-lock-other-'));
    fs.writeFileSync(path.join(other, '.git'), `gitdir: ${path.join(repo, '.git')}\n`);
    expect(removeStaleWorktreeLocks(other)).toEqual([]); // a .git rewritten to point at the repository
    fs.rmSync(other, { recursive: true, force: true });
    expect(fs.existsSync(repoLock)).toBe(true);
  } finally {
    fs.rmSync(repoLock, { force: true });
  }
});
