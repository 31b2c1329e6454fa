/**
 * Commits an attempt's worktree with as few git processes as the state allows: one `git status --porcelain=v2
 * --branch` says both whether there is anything to commit and which commit HEAD is, so an agent that changed nothing
 * on a fresh branch costs one process; otherwise `git add -A`, `git commit`, and one `git diff --raw --numstat` for
 * the statistics of base..HEAD (the commit just made).
 */
import type { AttemptChanges } from '../../lib/db/attempts';
import { git, gitOrThrow } from '../../lib/git';
import { parseRawNumstatZ } from '../../lib/attempts/rawNumstat';
import { removeStaleWorktreeLocks, staleLockRemovedMessage } from './staleWorktreeLocks';

/** Identity for commits made by Armada when the repository has none configured. */
export const COMMIT_IDENTITY = ['-c', 'user.name=Armada', '-c', 'user.email=armada@localhost'];

const IDENTITY_TTL_MS = 60_000;
/** Whether a repository has an identity configured, per repository (its worktrees share its config), briefly cached. */
const identityCache = new Map<string, { args: string[]; at: number }>();

async function identityArgs(cwd: string, repoPath: string | undefined): Promise<string[]> {
  const key = repoPath ?? cwd;
  const hit = identityCache.get(key);
  if (hit && Date.now() - hit.at < IDENTITY_TTL_MS) return hit.args;
  const r = await git(cwd, ['config', 'user.email']);
  const args = r.code === 0 && r.stdout.trim() ? [] : COMMIT_IDENTITY;
  identityCache.set(key, { args, at: Date.now() });
  return args;
}

export const NO_CHANGES: AttemptChanges = { filesChanged: 0, filesCreated: 0, filesModified: 0, filesDeleted: 0, linesAdded: 0, linesRemoved: 0, files: [] };

/** Statistics of `git diff --raw --numstat -z -M base HEAD` (one process; lib/attempts/rawNumstat.ts). */
export function parseRawNumstat(out: string): AttemptChanges {
  const c: AttemptChanges = { ...NO_CHANGES, files: [] };
  for (const f of parseRawNumstatZ(out)) {
    c.filesChanged++;
    c.files.push(f.path);
    if (f.status === 'added') c.filesCreated++;
    else if (f.status === 'deleted') c.filesDeleted++;
    else c.filesModified++;
    c.linesAdded += f.added;
    c.linesRemoved += f.removed;
  }
  return c;
}

/** Change statistics of base..HEAD in the worktree. */
export async function changeStats(cwd: string, baseCommit: string): Promise<AttemptChanges> {
  return parseRawNumstat(await gitOrThrow(cwd, ['diff', '--raw', '--numstat', '-z', '-M', baseCommit, 'HEAD']));
}

/** The shape of an attempt's branch, `<prefix>/task-<task id>-attempt-<n>` (lib/attempts/branchNames.ts). */
const ATTEMPT_BRANCH = /\/task-.+-attempt-\d+$/;

/** The agent left the worktree on a line of history without the attempt's base: its work cannot become the attempt's. */
export class WorkOffTheAttempt extends Error {}

/**
 * An agent that switched the worktree to a branch of its own (`git checkout -b fix`) or detached HEAD: its commits
 * and its uncommitted changes are taken back onto the attempt branch (`git checkout -B <attempt branch>` from where
 * HEAD is, keeping the tree), so the diff, merge and pull request see them. Only when HEAD still holds the base commit;
 * otherwise (it checked out an unrelated history) the attempt fails saying where the work is.
 */
async function returnToAttemptBranch(cwd: string, baseCommit: string, branch: string, onBranch: string): Promise<void> {
  const where = onBranch === '(detached)' ? 'a detached HEAD' : `branch "${onBranch}"`;
  if ((await git(cwd, ['merge-base', '--is-ancestor', baseCommit, 'HEAD'])).code !== 0) {
    throw new WorkOffTheAttempt(`the agent left the worktree on ${where}, which does not hold the attempt's base commit ${baseCommit.slice(0, 12)}; its work is there, not on ${branch}`);
  }
  await gitOrThrow(cwd, ['checkout', '-q', '-B', branch]);
}

/**
 * Commits everything in the worktree on the attempt branch (nothing to commit is fine) and returns the statistics of
 * base..HEAD. Idempotent: a retry after the commit finds a clean tree and computes the same statistics.
 */
export async function commitWorktree(input: {
  worktreePath: string;
  baseCommit: string;
  message: string;
  repoPath?: string;
  /** The attempt's branch, asked for only when the worktree is not on an attempt branch (the agent switched). */
  attemptBranch?: () => Promise<string | null>;
  /**
   * Given, a stale `index.lock`/`HEAD.lock` of the worktree (a git killed mid-write left it, nobody holds it:
   * staleWorktreeLocks.ts) is removed first, and this is called with the line saying so for the attempt's log.
   */
  onStaleLockRemoved?: (message: string) => Promise<void>;
}): Promise<AttemptChanges> {
  const cwd = input.worktreePath;
  if (input.onStaleLockRemoved) {
    for (const l of removeStaleWorktreeLocks(cwd)) if (l.removed) await input.onStaleLockRemoved(staleLockRemovedMessage(l));
  }
  let status = await gitOrThrow(cwd, ['status', '--porcelain=v2', '--branch', '--untracked-files=all']);
  const onBranch = status.match(/^# branch\.head (.*)$/m)?.[1];
  if (input.attemptBranch && onBranch !== undefined && !ATTEMPT_BRANCH.test(onBranch)) {
    const branch = await input.attemptBranch();
    if (branch && branch !== onBranch) {
      await returnToAttemptBranch(cwd, input.baseCommit, branch, onBranch);
      status = await gitOrThrow(cwd, ['status', '--porcelain=v2', '--branch', '--untracked-files=all']);
    }
  }
  const lines = status.split('\n').filter(Boolean);
  const head = lines.find((l) => l.startsWith('# branch.oid '))?.slice('# branch.oid '.length).trim();
  const dirty = lines.some((l) => !l.startsWith('#'));
  if (dirty) {
    await gitOrThrow(cwd, ['add', '-A']);
    // an add that only touched ignored or mode-filtered paths leaves nothing staged: that is no commit, not an error
    const r = await git(cwd, [...(await identityArgs(cwd, input.repoPath)), 'commit', '-q', '--no-verify', '-m', input.message]);
    if (r.code !== 0 && !/nothing to commit|nothing added to commit|no changes added/i.test(r.stdout + r.stderr)) {
      throw new Error(`git commit failed: ${r.stderr.trim() || r.stdout.trim() || `exit ${r.code}`}`);
    }
  } else if (head === input.baseCommit) {
    return { ...NO_CHANGES, files: [] };
  }
  return changeStats(cwd, input.baseCommit);
}
