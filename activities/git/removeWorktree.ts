/**
 * removeWorktree: an attempt's worktree, and with `deleteBranch` its branch and merge markers (`attemptId`'s, or
 * `mergeMarkersOf`'s when the row is gone or going), removed from the project's repository, each git step's outcome
 * checked. What is already gone counts as removed, so a repeat (a retry, a DELETE after a merge's cleanup) converges.
 * What git refuses is the removal's outcome, never reported done while the worktree or the branch is still there:
 * - a lock file in the way of the branch's delete (another git running, or one that crashed): looked for before
 *   anything is removed and waited for briefly (lockStillThere; a lock git meets later, withRepoLock's retries), then
 *   REPOSITORY_LOCKED naming it; the worktree stays, so a later cleanup finds the branch through it;
 * - a worktree locked with `git worktree lock`: WORKTREE_LOCKED with its reason, nothing removed;
 * - any other refusal (the branch checked out in a worktree of the user's): CLEANUP_FAILED with git's message.
 * A refusal is returned, not thrown: retrying it at once would not help, and a merge whose cleanup was refused has
 * merged all the same. The attempt row, when given, records the outcome (cleaned_up, or cleanup_error).
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Pool } from 'pg';
import type { CleanupError, WorktreeRemoval } from '../../lib/attempts/cleanup';
import { setAttemptCleanedUp, setAttemptCleanupFailed } from '../../lib/db/attempts';
import { AppError, conflict } from '../../lib/errors';
import { git, inspectLocalRepo } from '../../lib/git';
import type { Logger } from '../../lib/logger';
import { killProcessesUnder } from '../../lib/process/processGroup';
import { lockFileOf, lockStillThere, RepositoryLocked, repositoryLockedError } from './gitLocks';
import { MERGE_MARKER_PREFIX, removeMergeMarkers } from './mergeMarkers';
import { withRepoLock } from './repoLock';

export interface RemoveWorktreeInput {
  /** The attempt whose row records the outcome; null when its row is gone or going (a delete). */
  attemptId: string | null;
  /**
   * The attempt whose merge markers go with its branch when `attemptId` is null (a delete); absent in the inputs of
   * workflows started before, whose deletes left the markers.
   */
  mergeMarkersOf?: string | null;
  repoPath: string;
  worktreePath: string | null;
  branch: string | null;
  deleteBranch: boolean;
}

/** A step git refused for a reason that retrying at once would not clear. */
class CleanupRefused extends Error {
  constructor(readonly error: AppError) {
    super(error.message);
  }
}

/** What a removal got done before it stopped. */
interface Progress {
  worktree: boolean;
  branch: boolean;
}

/** Removes the worktree and (with deleteBranch) the branch and its merge markers; the outcome, also on the row. */
export async function removeWorktree(deps: { db: Pool; logger?: Logger }, input: RemoveWorktreeInput): Promise<WorktreeRemoval> {
  const done: Progress = { worktree: false, branch: false };
  let error: CleanupError | null = null;
  try {
    await withRepoLock(input.repoPath, () => removeFromRepository(input, done));
  } catch (err) {
    const refused = refusal(input, err, done);
    if (!refused) throw err; // not git's answer (the process could not start, …): the activity's retries
    error = { code: refused.code, message: refused.message, details: refused.details ?? {} };
  }
  if (error) {
    deps.logger?.warn({ attemptId: input.attemptId, repository: input.repoPath, worktreePath: input.worktreePath, branch: input.branch, error }, 'worktree not removed');
    if (input.attemptId) await setAttemptCleanupFailed(deps.db, input.attemptId, error);
  } else if (input.attemptId) {
    await setAttemptCleanedUp(deps.db, input.attemptId);
  }
  return { removed: !error, error };
}

async function removeFromRepository(input: RemoveWorktreeInput, done: Progress): Promise<void> {
  const { repoPath: repo, worktreePath } = input;
  const branch = input.deleteBranch ? input.branch : null;
  if ((await inspectLocalRepo(repo)).kind === 'none') {
    // the repository is gone, and its registrations and branches with it
    if (worktreePath) removeDirectory(worktreePath);
    return;
  }
  if (branch) {
    const lock = await lockStillThere(repo, [`refs/heads/${branch}`, 'packed-refs']);
    if (lock) throw new RepositoryLocked(lock);
  }
  if (worktreePath) await removeWorktreeOf(repo, worktreePath);
  done.worktree = true;
  if (!branch) return;
  await deleteBranch(repo, branch);
  done.branch = true;
  const markersOf = markersOwner(input);
  if (!markersOf) return;
  await removeMergeMarkers(repo, markersOf).catch((err: Error) => {
    throw lockFileOf(err) ? err : refusedBy(err.message, repo, {});
  });
}

/** The attempt whose merge markers go with the branch. */
function markersOwner(input: RemoveWorktreeInput): string | null {
  return input.attemptId ?? input.mergeMarkersOf ?? null;
}

/** The worktree's directory and its registration; a worktree locked with `git worktree lock` is left as it is. */
async function removeWorktreeOf(repo: string, worktreePath: string): Promise<void> {
  const entry = await registration(repo, worktreePath);
  if (entry?.locked !== undefined) {
    const reason = entry.locked;
    throw new CleanupRefused(
      conflict(
        `the worktree ${worktreePath} is locked (git worktree lock${reason ? `: ${reason}` : ''}), so nothing was removed`,
        'WORKTREE_LOCKED',
        { repository: repo, worktreePath, reason },
      ),
    );
  }
  killProcessesUnder(worktreePath); // e.g. a service the setup script left running for the agent
  if (entry) {
    const r = await git(repo, ['worktree', 'remove', '--force', worktreePath]);
    // a lock file: withRepoLock tries again; anything else (a worktree holding submodules): the directory goes below
    // and the prune drops the registration
    if (r.code !== 0 && lockFileOf(r.stderr)) throw new Error(`git worktree remove failed: ${r.stderr.trim()}`);
  }
  removeDirectory(worktreePath);
  const prune = await git(repo, ['worktree', 'prune']);
  if (await registration(repo, worktreePath)) {
    throw refusedBy(`git still lists the worktree ${worktreePath} after removing it${prune.stderr.trim() ? ` (${prune.stderr.trim()})` : ''}`, repo, { worktreePath });
  }
}

function removeDirectory(dir: string): void {
  fs.rmSync(dir, { recursive: true, force: true });
}

/** `git branch -D`; a branch already gone is deleted. */
async function deleteBranch(repo: string, branch: string): Promise<void> {
  const r = await git(repo, ['branch', '-D', branch]);
  if (r.code === 0) return;
  // exit 1: no such ref (128 would be git failing to answer)
  if ((await git(repo, ['rev-parse', '--verify', '--quiet', `refs/heads/${branch}`])).code === 1) return;
  if (lockFileOf(r.stderr)) throw new Error(`git branch -D failed: ${r.stderr.trim()}`); // withRepoLock tries again
  throw refusedBy(`git branch -D ${branch} failed: ${r.stderr.trim() || `exit ${r.code}`}`, repo, { branch });
}

function refusedBy(message: string, repository: string, details: Record<string, unknown>): CleanupRefused {
  return new CleanupRefused(conflict(message, 'CLEANUP_FAILED', { repository, ...details }));
}

/** The registration of `worktreePath` in `repo` (`locked`: its reason, '' without one), from git's own list. */
async function registration(repo: string, worktreePath: string): Promise<{ locked?: string } | undefined> {
  const r = await git(repo, ['worktree', 'list', '--porcelain']);
  if (r.code !== 0) throw refusedBy(`git worktree list failed: ${r.stderr.trim() || `exit ${r.code}`}`, repo, {});
  // `git worktree add` records the real path, fastWorktree.ts the path as given
  const wanted = new Set([`worktree ${path.resolve(worktreePath)}`, `worktree ${canonical(worktreePath)}`]);
  for (const block of r.stdout.split('\n\n')) {
    const lines = block.split('\n');
    if (!wanted.has(lines[0] ?? '')) continue;
    const locked = lines.find((l) => l === 'locked' || l.startsWith('locked '));
    return locked === undefined ? {} : { locked: locked.slice('locked '.length) };
  }
  return undefined;
}

/** The path as git records a worktree's: its real path, or its parent's when it is gone. */
function canonical(p: string): string {
  try {
    return fs.realpathSync(p);
  } catch {
    try {
      return path.join(fs.realpathSync(path.dirname(p)), path.basename(p));
    } catch {
      return path.resolve(p);
    }
  }
}

/** git's refusal as the error the API shows, with what to do; undefined for a failure that is not git's answer. */
function refusal(input: RemoveWorktreeInput, err: unknown, done: Progress): AppError | undefined {
  const kept: string[] = [];
  if (input.worktreePath && !done.worktree) kept.push(`the worktree ${input.worktreePath}`);
  if (input.deleteBranch && input.branch && !done.branch) kept.push(`the branch ${input.branch}`);
  const markersOf = markersOwner(input);
  if (!kept.length && markersOf) kept.push(`the merge markers ${MERGE_MARKER_PREFIX}${markersOf}/`);
  const next = `${retryAdvice(input, done)}. Kept: ${kept.join(', ')}`;
  const details = { worktreePath: input.worktreePath, branch: input.branch };
  const lockFile = lockFileOf(err);
  if (lockFile) return repositoryLockedError(input.repoPath, lockFile, next, details);
  if (!(err instanceof CleanupRefused)) return undefined;
  const e = err.error;
  const clear = e.code === 'WORKTREE_LOCKED' ? `Unlock it (git -C ${input.repoPath} worktree unlock ${input.worktreePath})` : 'Once that is cleared';
  return new AppError(e.statusCode, e.code, `${e.message}. ${clear}, then ${next}`, { ...details, ...e.details });
}

/**
 * What removes them later: a DELETE of the attempt while its row is there, else the janitor through the worktree,
 * else the git command (the row and the worktree are gone, so nothing of Armada's finds them again).
 */
function retryAdvice(input: RemoveWorktreeInput, done: Progress): string {
  if (input.attemptId) return `delete the attempt (DELETE /api/attempts/${input.attemptId}) to remove them`;
  if (!done.worktree) return "this host's worktree janitor removes them at its next pass (armada worktrees prune runs one)";
  const markersOf = markersOwner(input);
  if (done.branch && markersOf) {
    const repo = input.repoPath;
    return `delete them: git -C ${repo} for-each-ref --format='delete %(refname)' ${MERGE_MARKER_PREFIX}${markersOf}/ | git -C ${repo} update-ref --stdin`;
  }
  return `delete the branch: git -C ${input.repoPath} branch -D ${input.branch}`;
}
