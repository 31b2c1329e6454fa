/**
 * Stopping runs of workflowRunWorkflow: a cancel request to Temporal, which the running task's activity turns into
 * killing its process group (SIGTERM, SIGKILL after 2 s) before the workflow records `stopped`, then a bounded wait.
 * POST /executions/{id}/stop stops one run; deleting a workflow (or the source its flow tasks use) stops every run of
 * it still going, so nothing of a deleted workflow keeps running.
 */
import type { FastifyBaseLogger } from 'fastify';
import type { Client } from '@temporalio/client';
import type { Queryable } from '../../lib/db/pool';
import { requestExecutionStops, type RunningRun } from '../../lib/db/schedulerExecutions';
import { isRunning, requestCancel } from '../../lib/temporal/workflowHandles';
import { withinDeadline } from './temporalAccess';

/** How long a stop waits for the run to end before answering. */
export const STOP_WAIT_MS = 8000;
const POLL_MS = 100;

/** Reads until `done` holds or `ms` passed; the last read. */
export async function pollUntil<T>(read: () => Promise<T>, done: (value: T) => boolean, ms = STOP_WAIT_MS): Promise<T> {
  const deadline = Date.now() + ms;
  let value = await read();
  while (!done(value) && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, POLL_MS));
    value = await read();
  }
  return value;
}

/**
 * Waits (up to `ms` in all) until Temporal reports each run closed, which for a cancelled run means its task's
 * process is gone; the runs still open then.
 */
export async function waitClosed(client: Client, temporalWorkflowIds: string[], ms = STOP_WAIT_MS): Promise<string[]> {
  const deadline = Date.now() + ms;
  // each look within what is left of the wait: a Temporal that does not answer ends it (the run counts as open)
  const running = (id: string) => client.connection.withDeadline(Math.max(deadline, Date.now() + POLL_MS), () => isRunning(client, id)).catch(() => true);
  const stillOpen = await Promise.all(temporalWorkflowIds.map((id) => pollUntil(() => running(id), (o) => !o, ms)));
  return temporalWorkflowIds.filter((_id, i) => stillOpen[i]);
}

/**
 * Stops the runs of workflows just deleted and waits (bounded) for them to end: Temporal's cancel, then the stop
 * request their running tasks' tries read every second (so they stop at once, not when the cancel reaches them with a
 * heartbeat). The deletion has committed, so this never throws: a run it could not stop is logged, and writes nothing
 * when it ends (its row is gone).
 */
export async function stopRuns(client: Client, db: Queryable, runs: RunningRun[], log: FastifyBaseLogger): Promise<void> {
  const temporalWorkflowIds = runs.map((r) => r.temporalWorkflowId);
  try {
    await withinDeadline(client, 'Stopping the runs of a deleted workflow', () => Promise.all(temporalWorkflowIds.map((id) => requestCancel(client, id))));
    await requestExecutionStops(db, runs.map((r) => r.executionId));
    const open = await waitClosed(client, temporalWorkflowIds);
    if (open.length) log.warn({ runs: open }, `runs of a deleted workflow had not ended ${STOP_WAIT_MS / 1000} s after their stop`);
  } catch (err) {
    log.warn({ err: { message: (err as Error).message }, runs: temporalWorkflowIds }, 'could not stop the runs of a deleted workflow');
  }
}
