/**
 * The attempt's worktree back to its last commit before an agent runs again after a lost run: `git reset --hard`,
 * then `git clean -fd`, each checked. A reset git refuses fails the try that asked for it, so the agent never starts
 * on a tree still holding the lost run's edits (before, both commands' exit codes were ignored and it did).
 */
import fs from 'node:fs';
import path from 'node:path';
import { ApplicationFailure } from '@temporalio/activity';
import { git } from '../../lib/git';
import { lockFileOf } from './gitLocks';

/**
 * Resets `worktreePath`, or throws: `WorktreeLocked` (retryable: another git holds a lock file there, or one was
 * killed mid-write and left it; the activity's next try resets again) or `WorktreeResetFailed` (not retryable: git
 * refused for another reason, which another try would meet again).
 */
export async function resetWorktree(worktreePath: string): Promise<void> {
  await assertOwnWorkTree(worktreePath);
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
      throw ApplicationFailure.retryable(
        `${what}: ${lockFile} exists (another git process is running there, or one was killed mid-write and left it), so the agent was not started. If no git process is running there, remove ${lockFile}; the next try resets the worktree again`,
        'WorktreeLocked',
        { worktreePath, lockFile },
      );
    }
    throw ApplicationFailure.nonRetryable(`${what}, so the agent was not started: ${stderr}`, 'WorktreeResetFailed', { worktreePath, command: `git ${args.join(' ')}`, stderr });
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
