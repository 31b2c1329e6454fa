/**
 * The worktree janitor of a worker process: prunes orphaned attempt worktrees of this host, then orphaned managed
 * clones of deleted projects (after the worktrees, which are linked into them), then the temp dirs scheduler scripts
 * of dead workers left (activities/scheduler/scriptDirs.ts), at start and then every
 * `attempts.janitorIntervalMs` (default hourly, 0 = off). A plain timer, not a Temporal activity: it is housekeeping
 * of this host's disk, not business state (docs/attempts.md#orphaned-worktrees, docs/task-service.md#managed-clones).
 */
import { pruneOrphanClones } from '../activities/git/cloneJanitor';
import { pruneStaleScriptDirs } from '../activities/scheduler/scriptDirs';
import { pruneOrphanWorktrees, type JanitorDeps } from '../activities/git/worktreeJanitor';

export const DEFAULT_JANITOR_INTERVAL_MS = 3_600_000;

export interface WorktreeJanitor {
  /** Resolves when no pass is running (tests). */
  idle(): Promise<void>;
  /** Stops the timer and waits for the running pass to finish its current entry. */
  stop(): Promise<void>;
}

export function startWorktreeJanitor(deps: JanitorDeps, intervalMs = DEFAULT_JANITOR_INTERVAL_MS): WorktreeJanitor {
  const log = deps.logger.child({ component: 'worktree-janitor' });
  let stopped = intervalMs <= 0;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;

  const pass = async () => {
    try {
      const { pruned, failed } = await pruneOrphanWorktrees({ ...deps, logger: log }, { shouldStop: () => stopped });
      const clones = await pruneOrphanClones({ ...deps, logger: log }, { shouldStop: () => stopped });
      pruneStaleScriptDirs(log); // scheduler scripts' temp dirs of workers killed outright
      if (pruned.length || failed.length || clones.removed.length || clones.failed.length) {
        log.info({ pruned: pruned.length, failed: failed.length, clonesRemoved: clones.removed.length, clonesFailed: clones.failed.length }, 'worktree janitor pass done');
      }
    } catch (err) {
      if (!stopped) log.warn({ err: { message: (err as Error).message } }, 'worktree janitor pass failed; retrying at the next interval');
    }
  };
  const run = () => {
    timer = undefined;
    running = pass().finally(() => {
      running = undefined;
      if (stopped) return;
      timer = setTimeout(run, intervalMs);
      timer.unref();
    });
  };
  if (!stopped) run();

  return {
    async idle() {
      while (running) await running;
    },
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      while (running) await running;
    },
  };
}
