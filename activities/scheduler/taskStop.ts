/**
 * When a scheduler task's try stops its work (the script's process group, the flow's request, a wait for an earlier
 * try's outcome), docs/scheduler.md#stop:
 * - its execution was stopped (POST …/stop) or its workflow deleted, as scheduler_stop_requests says, which the try
 *   reads every second: a stop takes effect within about a second, not when Temporal's cancellation reaches the try
 *   with a heartbeat (heartbeats are sent at most every 24 s with a 30 s heartbeat timeout);
 * - Temporal cancelled the try for a stop (cancel requested), the worker's shutdown, a reset or a pause.
 * A cancellation because Temporal no longer knows the try (timed out, not found: its worker was cut off from Temporal
 * longer than the heartbeat timeout) does not stop the work while the run is open: the work goes on, its outcome is
 * recorded, and the next try reports it (activities/scheduler/taskOutcomes.ts). Only when the run itself is closed
 * (terminated, say) does the work stop.
 */
import { Context } from '@temporalio/activity';
import { WorkflowNotFoundError } from '@temporalio/client';
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import { stopRequested } from '../../lib/db/schedulerExecutions';
import { EXECUTION_STOPPED } from '../../lib/scheduler/taskStop';
import type { ActivityDeps } from '../index';

/** How often a running try reads whether its execution is to stop. */
export const STOP_POLL_MS = 1000;
/** How often a try that Temporal no longer knows asks whether its run is still open (until Temporal answers). */
const RUN_CHECK_MS = 5000;

export interface TaskStop {
  /** Aborts when the try must stop its work. */
  readonly signal: AbortSignal;
  /** What the try throws once `signal` aborted: a cancellation (Temporal's), or a non-retryable ExecutionStopped. */
  failure(): Error;
  /** True when the stop came with the worker's shutdown (the work was cut short, not asked to stop). */
  readonly byShutdown: boolean;
  /** Ends the watching (always, when the try ends). */
  dispose(): void;
}

/** Watches for the stop of the try running now. */
export function watchTaskStop(deps: ActivityDeps, executionId: string): TaskStop {
  const ctx = Context.current();
  const controller = new AbortController();
  let by: 'request' | 'temporal' | undefined;
  let disposed = false;
  const stop = (how: 'request' | 'temporal') => {
    if (by || disposed) return;
    by = how;
    controller.abort();
  };

  let runCheck: NodeJS.Timeout | undefined;
  const checkRun = async () => {
    runCheck = undefined;
    const closed = await runClosed();
    if (closed) stop('temporal');
    else if (closed === undefined && !disposed && !by) runCheck = setTimeout(() => void checkRun(), RUN_CHECK_MS).unref();
  };
  const onCancel = () => {
    const d = ctx.cancellationDetails;
    if (d && (d.notFound || d.timedOut) && !d.cancelRequested && !d.workerShutdown) void checkRun();
    else stop('temporal');
  };
  if (ctx.cancellationSignal.aborted) onCancel();
  else ctx.cancellationSignal.addEventListener('abort', onCancel, { once: true });

  let reading = false;
  const read = () => {
    if (reading || by) return;
    reading = true; // one read at a time: a frozen PostgreSQL holds the last one
    stopRequested(deps.db, executionId)
      .then(
        (requested) => {
          if (requested) stop('request');
        },
        () => undefined,
      )
      .finally(() => {
        reading = false;
      });
  };
  const poll = setInterval(read, STOP_POLL_MS);
  poll.unref();

  /** Whether the try's run is closed; undefined when Temporal does not answer (yet). */
  async function runClosed(): Promise<boolean | undefined> {
    const { workflowExecution } = ctx.info;
    if (!workflowExecution) return undefined;
    try {
      const client = ctx.client;
      // the activity's own abort signal fired already: this question has its own, and a deadline
      const d = await client.withAbortSignal(new AbortController().signal, () =>
        client.connection.withDeadline(Date.now() + RUN_CHECK_MS, () => client.workflow.getHandle(workflowExecution.workflowId, workflowExecution.runId).describe()),
      );
      return d.status.name !== 'RUNNING';
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) return true;
      return undefined;
    }
  }

  return {
    signal: controller.signal,
    get byShutdown() {
      return by === 'temporal' && ctx.cancellationDetails?.workerShutdown === true;
    },
    failure: () => (by === 'request' ? ApplicationFailure.nonRetryable('Stopped by request', EXECUTION_STOPPED) : new CancelledFailure('execution stopped')),
    dispose() {
      disposed = true;
      clearInterval(poll);
      if (runCheck) clearTimeout(runCheck);
      ctx.cancellationSignal.removeEventListener('abort', onCancel);
    },
  };
}

/** Whether `err` is what a try throws once its stop's signal aborted (TaskStop's `failure()`): a request, or Temporal's. */
export function isTaskStopFailure(err: unknown): boolean {
  return err instanceof CancelledFailure || (err instanceof ApplicationFailure && err.type === EXECUTION_STOPPED);
}
