/** The repository lock of this worker: one git write at a time per repository, and brief retries past git's lock files. */
import { lockFileOf, RepositoryLocked } from './gitLocks';

const repoLocks = new Map<string, Promise<unknown>>();

/**
 * Serialises worktree add/remove and merges per repository within this worker (git takes repository-wide locks for
 * them) and retries briefly (10 times, about 5.5 s in all) when git refused because a lock file exists (lockFileOf).
 */
export async function withRepoLock<T>(repo: string, fn: () => Promise<T>): Promise<T> {
  const prev = repoLocks.get(repo) ?? Promise.resolve();
  const run = prev.catch(() => undefined).then(async () => {
    for (let i = 0; ; i++) {
      try {
        return await fn();
      } catch (err) {
        // a RepositoryLocked has waited for its lock already
        if (i >= 10 || err instanceof RepositoryLocked || !lockFileOf(err)) throw err;
        await new Promise((r) => setTimeout(r, 100 * (i + 1)));
      }
    }
  });
  repoLocks.set(repo, run);
  try {
    return await run;
  } finally {
    if (repoLocks.get(repo) === run) repoLocks.delete(repo);
  }
}
