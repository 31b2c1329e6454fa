/**
 * The attempt's worktree back to its last commit before an agent runs again after a lost run: `git reset --hard`,
 * then `git clean -fd`, each checked. A reset git refuses fails the try that asked for it, so the agent never starts
 * on a tree still holding the lost run's edits (before, both commands' exit codes were ignored and it did). A stale
 * `index.lock`/`HEAD.lock` of the worktree (a git of the lost run killed mid-write, nobody holding it) is removed
 * first, by the commit's rule (staleWorktreeLocks.ts); before, the reset refused it on every try.
 */
import fs from 'node:fs';
import path from 'node:path';
import { ApplicationFailure } from '@temporalio/activity';
import { git } from '../../lib/git';
import { lockFileOf } from './gitLocks';
import { removeStaleWorktreeLocks, STALE_LOCK_AGE_MS, staleLockRemovedMessage } from './staleWorktreeLocks';

/**
 * Resets `worktreePath`, or throws: `WorktreeLocked` (retryable: a lock file there that may still be held: a git
 * working there, or one killed less than STALE_LOCK_AGE_MS ago; the activity's next try looks again) or
 * `WorktreeResetFailed` (not retryable: git refused for another reason, which another try would meet again).
 * `onStaleLockRemoved` gets the line saying which stale lock was removed, for the run's log.
 */
export async function resetWorktree(worktreePath: string, onStaleLockRemoved?: (message: string) => void): Promise<void> {
  await assertOwnWorkTree(worktreePath);
  // a lock nobody can be holding goes first (the commit's rule); one that may be held is left for git to refuse
  const kept = new Map<string, string>();
  for (const l of removeStaleWorktreeLocks(worktreePath)) {
    if (l.removed) onStaleLockRemoved?.(staleLockRemovedMessage(l));
    else kept.set(realOrResolved(worktreePath, l.lockFile), l.why);
  }
  for (const args of [
    ['reset', '--hard', '--quiet', 'HEAD'],
    ['clean', '-fd', '--quiet'],
  ]) {
    const r = await git(worktreePath, args);
    if (r.code === 0) continue;
    const stderr = r.stderr.trim() || `exit ${r.code}`;
    const what = `the worktree ${worktreePath} could not be reset to its last commit before the agent runs again (git ${args[0]})`;
    const lockFile = lockFileOf(stderr);
    if (lockFile) {
      const why = kept.get(realOrResolved(worktreePath, lockFile));
      throw ApplicationFailure.retryable(
        `${what}: ${lockFile} exists (${why ? `left in place: ${why}` : 'another git process is running there, or one was killed mid-write and left it'}), so the agent was not started. The next try resets the worktree again, and removes the lock first once it is older than ${STALE_LOCK_AGE_MS / 1000} s and no process works in the worktree or has it open`,
        'WorktreeLocked',
        { worktreePath, lockFile },
      );
    }
    throw ApplicationFailure.nonRetryable(`${what}, so the agent was not started: ${stderr}`, 'WorktreeResetFailed', { worktreePath, command: `git ${args.join(' ')}`, stderr });
  }
}

/** A lock file's real path (git's message and the worktree's `.git` file may name it differently), else as resolved. */
function realOrResolved(worktreePath: string, file: string): string {
  const resolved = path.resolve(worktreePath, file);
  try {
    return fs.realpathSync(resolved);
  } catch {
    return resolved;
  }
}

/**
 * Throws WorktreeResetFailed unless `worktreePath` is the top of a git work tree: with its `.git` gone, git would
 * take the next repository up the path for it, and `reset --hard` there is somebody else's work.
 */
async function assertOwnWorkTree(worktreePath: string): Promise<void> {
  let real: string | undefined;
  try {
    real = fs.realpathSync(worktreePath);
  } catch {
    // gone: said below
  }
  const top = real ? await git(real, ['rev-parse', '--show-toplevel']) : undefined;
  if (real && top?.code === 0 && path.resolve(top.stdout.trim()) === real) return;
  const why = !real ? 'it does not exist' : (top?.stderr.trim() ?? '') || `it is not the top of a git work tree (git names ${top?.stdout.trim()})`;
  throw ApplicationFailure.nonRetryable(`the worktree ${worktreePath} could not be reset before the agent runs again, so the agent was not started: ${why}`, 'WorktreeResetFailed', { worktreePath });
}
