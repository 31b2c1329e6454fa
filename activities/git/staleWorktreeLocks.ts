/**
 * Stale lock files in an attempt's own worktree. A git process killed with SIGKILL (the OOM killer, a container
 * killed) while it held `index.lock` or `HEAD.lock` leaves the file behind, and git then refuses every later write
 * there: every commit and follow-up of the attempt failed until someone removed it by hand. In an attempt's worktree
 * Armada is the only writer (the agent runs there only while its run lasts), so a lock there is removed when nobody
 * can be holding it: no process works in the worktree (its cwd inside it) or has the lock file open (both read from
 * /proc), and the lock is older than STALE_LOCK_AGE_MS. Only the worktree's own lock files
 * (`.git/worktrees/<attemptId>/index.lock` and `HEAD.lock`), never the project repository's: there the user and
 * their tools write too, and a lock is theirs to remove (mergeAttempt.ts refuses with REPOSITORY_LOCKED).
 */
import fs from 'node:fs';
import path from 'node:path';

/** A lock file younger than this may belong to a git that is about to let go of it (or a holder /proc cannot show). */
export const STALE_LOCK_AGE_MS = 5000;

/** The per-worktree git directory of a linked work tree (its `.git` file's `gitdir:`), or undefined for anything else. */
function worktreeGitDir(worktree: string): string | undefined {
  let text: string;
  try {
    text = fs.readFileSync(path.join(worktree, '.git'), 'utf8');
  } catch {
    return undefined; // no .git, or a directory: not a linked work tree, not an attempt's
  }
  const dir = /^gitdir: (.+)$/m.exec(text)?.[1]?.trim();
  if (!dir) return undefined;
  const gitDir = path.resolve(worktree, dir);
  // a linked work tree's own directory is `<repository's git dir>/worktrees/<name>`: a `.git` pointing anywhere else
  // (rewritten by an agent, say at the repository's own .git) is not this worktree's, and its locks are left alone
  return path.basename(path.dirname(gitDir)) === 'worktrees' ? gitDir : undefined;
}

/**
 * A process that may hold a lock of `worktree` (real path): one whose cwd is in it, or which has `lockFile` open;
 * `unknown` when /proc cannot be read (not Linux). Processes this user may not inspect are passed over: they cannot
 * write in the worktree unless they are root's.
 */
export function lockHolder(worktree: string, lockFile: string): string | undefined {
  let pids: string[];
  try {
    pids = fs.readdirSync('/proc').filter((p) => /^\d+$/.test(p));
  } catch {
    return 'unknown (/proc cannot be read)';
  }
  const inside = (p: string) => p === worktree || p.startsWith(`${worktree}/`);
  for (const pid of pids) {
    try {
      if (inside(fs.readlinkSync(`/proc/${pid}/cwd`))) return `process ${pid} works in the worktree`;
    } catch {
      continue; // gone meanwhile, or not ours to inspect
    }
    let fds: string[];
    try {
      fds = fs.readdirSync(`/proc/${pid}/fd`);
    } catch {
      continue;
    }
    for (const fd of fds) {
      try {
        if (fs.readlinkSync(`/proc/${pid}/fd/${fd}`) === lockFile) return `process ${pid} has ${lockFile} open`;
      } catch {
        // closed meanwhile
      }
    }
  }
  return undefined;
}

/** What removeStaleWorktreeLocks did with one lock file it found. */
export interface FoundLock {
  lockFile: string;
  removed: boolean;
  /** Why it was removed, or why it was left. */
  why: string;
}

/**
 * Looks for `index.lock` and `HEAD.lock` of the attempt's work tree `worktree` and removes each that nobody can be
 * holding (see above); one still held, or too young, is left for git to refuse (as before). Returns what it found.
 * Costs one small read and two stats when there is no lock, the usual case.
 */
export function removeStaleWorktreeLocks(worktree: string, now = Date.now()): FoundLock[] {
  const gitDir = worktreeGitDir(worktree);
  if (!gitDir) return [];
  const found: FoundLock[] = [];
  for (const name of ['index.lock', 'HEAD.lock']) {
    const lockFile = path.join(gitDir, name);
    let mtimeMs: number;
    try {
      mtimeMs = fs.statSync(lockFile).mtimeMs;
    } catch {
      continue; // none: the usual case
    }
    const age = now - mtimeMs;
    if (age < STALE_LOCK_AGE_MS) {
      found.push({ lockFile, removed: false, why: `it is ${Math.max(0, Math.round(age))} ms old, a git may still be letting go of it` });
      continue;
    }
    let real: { worktree: string; lockFile: string };
    try {
      real = { worktree: fs.realpathSync(worktree), lockFile: fs.realpathSync(lockFile) };
    } catch {
      continue; // gone meanwhile
    }
    const holder = lockHolder(real.worktree, real.lockFile);
    if (holder) {
      found.push({ lockFile, removed: false, why: holder });
      continue;
    }
    try {
      fs.unlinkSync(lockFile);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') continue;
      found.push({ lockFile, removed: false, why: `it could not be removed: ${(err as Error).message}` });
      continue;
    }
    found.push({
      lockFile,
      removed: true,
      why: `it was ${Math.round(age / 1000)} s old and no process works in the worktree or has it open: a git process killed mid-write (kill -9, out of memory) left it, and git would refuse every commit of this attempt while it is there`,
    });
  }
  return found;
}

/** The attempt log's line for a lock removeStaleWorktreeLocks removed. */
export const staleLockRemovedMessage = (l: FoundLock): string => `removed the stale git lock file ${l.lockFile}: ${l.why}`;
