/**
 * Ends the attempts whose workflow Temporal closed without them (lib/attempts/closedWorkflows.ts): every minute (the
 * first pass a minute after the start: nothing is lost by waiting, and a start calls Temporal no more than before), each attempt still `running` whose workflow closed more than `attempts.closedWorkflowGraceMs` (default 60 s)
 * ago is recorded cancelled, with a line in its log saying how the workflow ended.
 */
import { reconcileClosedAttemptWorkflows } from '../../lib/attempts/closedWorkflows';
import type { Logger } from '../../lib/logger';
import type { AttemptServiceDeps } from './attemptService';

/** Longer than a running agent's try needs to hear of the end itself (its heartbeat's "not found", then Temporal's answer). */
const CLOSED_FOR_MS = 60_000;
const EVERY_MS = 60_000;
/** How long the service's close waits for a pass in progress (one stuck on a Temporal that does not answer is left). */
const STOP_WAIT_MS = 5000;

export interface ClosedWorkflowReconciler {
  /** Runs one pass now (tests); resolves with the attempts it recorded cancelled. */
  runOnce(): Promise<string[]>;
  stop(): Promise<void>;
}

export function startClosedWorkflowReconciler(deps: AttemptServiceDeps & { logger: Logger }, opts: { everyMs?: number } = {}): ClosedWorkflowReconciler {
  const log = deps.logger.child({ component: 'attempt-closed-workflow-reconciler' });
  const closedForMs = deps.config.file.attempts?.closedWorkflowGraceMs ?? CLOSED_FOR_MS;
  let running: Promise<string[]> | undefined;
  const runOnce = (): Promise<string[]> => {
    // while Temporal or PostgreSQL is known down the pass waits for the next minute (the outage is logged once already)
    if (deps.dependencies?.isDown('temporal') || deps.dependencies?.isDown('postgres')) return Promise.resolve([]);
    running ??= (async () => reconcileClosedAttemptWorkflows(deps.db, await deps.temporal.client(), closedForMs))()
      .then((ids) => {
        if (ids.length) log.warn({ attempts: ids }, 'recorded attempts cancelled whose workflow Temporal had closed (terminated) while they ran');
        return ids;
      })
      .catch((err) => {
        log.warn({ err: { message: (err as Error).message } }, 'closed-workflow reconciliation failed; retrying later');
        return [];
      })
      .finally(() => {
        running = undefined;
      });
    return running;
  };
  const timer = setInterval(() => void runOnce(), opts.everyMs ?? EVERY_MS);
  timer.unref();
  return {
    runOnce,
    async stop() {
      clearInterval(timer);
      if (running) await Promise.race([running, new Promise((r) => setTimeout(r, STOP_WAIT_MS).unref())]);
    },
  };
}
