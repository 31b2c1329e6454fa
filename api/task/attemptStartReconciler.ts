/**
 * Finishes attempt starts that a task API process committed but never confirmed (it died or lost Temporal between
 * its commit and the workflow start): on start and every few seconds, each start pending longer than
 * `attempts.startReconcileAfterMs` gets its workflow started (idempotent by workflow id) and attempt.started published.
 */
import type { Logger } from '../../lib/logger';
import { reconcilePendingStarts, type AttemptServiceDeps } from './attemptService';

const RECONCILE_AFTER_MS = 60_000;
const EVERY_MS = 15_000;

export interface StartReconciler {
  /** Runs one pass now (tests, startup); resolves with how many starts it finished. */
  runOnce(): Promise<number>;
  stop(): Promise<void>;
}

export function startAttemptStartReconciler(deps: AttemptServiceDeps & { logger: Logger }, opts: { everyMs?: number } = {}): StartReconciler {
  const log = deps.logger.child({ component: 'attempt-start-reconciler' });
  const olderThanMs = deps.config.file.attempts?.startReconcileAfterMs ?? RECONCILE_AFTER_MS;
  let running: Promise<number> | undefined;
  const runOnce = (): Promise<number> => {
    running ??= reconcilePendingStarts(deps, olderThanMs)
      .then((n) => {
        if (n) log.info({ finished: n }, 'finished attempt starts left pending');
        return n;
      })
      .catch((err) => {
        log.warn({ err: { message: (err as Error).message } }, 'attempt start reconciliation failed; retrying later');
        return 0;
      })
      .finally(() => {
        running = undefined;
      });
    return running;
  };
  const timer = setInterval(() => void runOnce(), opts.everyMs ?? EVERY_MS);
  timer.unref();
  void runOnce();
  return {
    runOnce,
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
