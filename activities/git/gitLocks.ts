/**
 * git's lock files (`index.lock`, `HEAD.lock`, `refs/heads/<branch>.lock`): git creates one before it writes the
 * file and renames it over the file when done. One that exists means another git process is writing there, or one
 * crashed and left it; git then refuses the write ("Unable to create '<file>.lock': File exists"). A crashed git's
 * lock never goes away by itself, so such a write fails for good, naming the lock, instead of being retried. (In an
 * attempt's own worktree, where Armada is the only writer, the commit removes one nobody holds: staleWorktreeLocks.ts.)
 */
import fs from 'node:fs';
import path from 'node:path';
import { conflict, type AppError } from '../../lib/errors';
import { gitOrThrow } from '../../lib/git';
import { appErrorFailure } from '../../lib/temporal/appErrorFailure';
import type { ApplicationFailure } from '@temporalio/activity';

/** A lock file still there before a write, after waiting LOCK_WAIT_MS for it to go (withRepoLock does not wait again). */
export class RepositoryLocked extends Error {
  constructor(readonly lockFile: string) {
    super(`Unable to create '${lockFile}': File exists`);
  }
}

/**
 * git's refusal because a lock file exists, as git prints it (lockfile.c): `Unable to create '<file>.lock': File
 * exists.` on a `fatal:` or `error:` line, alone or after what git was doing (`error: cannot lock ref '<ref>': …`,
 * `error: could not delete reference <ref>: …`); gitOrThrow's `git <command> failed: ` may lead the line. Nothing
 * else is lock contention: a path or branch that merely contains "lock" (`feature/unlock`, `fix/locked-door`,
 * `/srv/cache.lock.d/`), a worktree locked with `git worktree lock` (held on purpose, not by a running git), or a
 * lock file git could not create for another reason (`Permission denied`). (withRepoLock and the worktree janitor
 * matched /\.lock|locked/i before, so such errors were retried for seconds as if another git held a lock.)
 */
const LOCK_EXISTS = /^(?:git [\w -]+ failed: )?(?:fatal|error): (?:[^\n]*?: )?Unable to create '([^\n]+?\.lock)': File exists\.?$/m;

/**
 * The lock file a failed git write names, if it failed on one: a RepositoryLocked, or git's message (an Error's, or
 * git's stderr as a string).
 */
export function lockFileOf(err: unknown): string | undefined {
  if (err instanceof RepositoryLocked) return err.lockFile;
  const text = typeof err === 'string' ? err : err instanceof Error ? err.message : undefined;
  return text === undefined ? undefined : LOCK_EXISTS.exec(text)?.[1];
}

/** How long a write waits for a lock file it finds to go (a git process that is running lets go of it). */
export const LOCK_WAIT_MS = 2000;

/**
 * The lock file of one of `gitPaths` (as `git rev-parse --git-path` names them: `index`, `HEAD`, `refs/heads/main`,
 * per work tree where git keeps them so) that still exists in the work tree `cwd` after waiting up to `waitMs` for it
 * to go; undefined when there is none.
 */
export async function lockStillThere(cwd: string, gitPaths: string[], waitMs = LOCK_WAIT_MS): Promise<string | undefined> {
  const out = await gitOrThrow(cwd, ['rev-parse', ...gitPaths.flatMap((p) => ['--git-path', p])]);
  const locks = out.split('\n').filter(Boolean).map((p) => `${path.resolve(cwd, p)}.lock`);
  const deadline = Date.now() + waitMs;
  for (;;) {
    const lock = locks.find((l) => fs.existsSync(l));
    if (!lock || Date.now() >= deadline) return lock;
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * A write to `repository` that a lock file refused: a 409 REPOSITORY_LOCKED, saying how to clear it; `retry` is what
 * to do once it is gone ("merge again"), `details` what else the caller knows.
 */
export function repositoryLockedError(repository: string, lockFile: string, retry: string, details: Record<string, unknown> = {}): AppError {
  return conflict(
    `${lockFile} exists: another git process is running in ${repository}, or one crashed and left it behind. If no git process is running there, remove ${lockFile}, then ${retry}`,
    'REPOSITORY_LOCKED',
    { lockFile, repository, ...details },
  );
}

/** repositoryLockedError as the non-retryable failure of an activity, for the API to answer with. */
export function repositoryLocked(repository: string, lockFile: string, retry: string): ApplicationFailure {
  return appErrorFailure(repositoryLockedError(repository, lockFile, retry));
}
