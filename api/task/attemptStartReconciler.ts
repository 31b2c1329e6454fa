/**
 * Finishes what a task API process committed but did not carry to Temporal (it died, or lost Temporal, between its
 * commit and the call): on start and every few seconds, each attempt start pending longer than
 * `attempts.startReconcileAfterMs` gets its workflow started (idempotent by workflow id) and attempt.started
 * published, and each committed cancel whose workflow cancel has been owed as long gets it sent again
 * (lib/attempts/owedCancels.ts; a cancel is idempotent too).
 */
import type { Logger } from '../../lib/logger';
import { reconcileOwedCancels, reconcilePendingStarts, type AttemptServiceDeps } from './attemptService';

const RECONCILE_AFTER_MS = 60_000;
const EVERY_MS = 15_000;

export interface StartReconciler {
  /** Runs one pass now (tests, startup); resolves with how many starts it finished (owed cancels are logged). */
  runOnce(): Promise<number>;
  stop(): Promise<void>;
}

export function startAttemptStartReconciler(deps: AttemptServiceDeps & { logger: Logger }, opts: { everyMs?: number } = {}): StartReconciler {
  const log = deps.logger.child({ component: 'attempt-start-reconciler' });
  const olderThanMs = deps.config.file.attempts?.startReconcileAfterMs ?? RECONCILE_AFTER_MS;
  let running: Promise<number> | undefined;
  const runOnce = (): Promise<number> => {
    running ??= reconcilePendingStarts(deps, olderThanMs)
      .then(async (n) => {
        if (n) log.info({ finished: n }, 'finished attempt starts left pending');
        const cancels = await reconcileOwedCancels(deps, olderThanMs);
        if (cancels) log.info({ cancels }, 'sent the workflow cancels of attempts cancelled while Temporal did not take them');
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
