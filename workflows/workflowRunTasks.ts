/** The task runners of workflowRunWorkflow, one activity per task, with their policies written out. */
import { proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../activities';

// Every task activity heartbeats each second from its first step to its last. The heartbeat timeout (30 s) is what a
// try survives of its worker being cut off from Temporal (a Temporal stall): a try that was only cut off finishes its
// work, records its outcome, and the next try reports that outcome instead of doing the work again; a dead worker is
// noticed within 30 s (docs/scheduler.md#task-outcomes). A stop does not wait for a heartbeat: the try reads its
// execution's stop request every second (activities/scheduler/taskStop.ts).
const HEARTBEAT_TIMEOUT = '30s';

// Scripts are not idempotent: a try that finds the script started by an earlier try never runs it again (it reports
// that try's outcome, or that its worker was lost), so a try timed out by a stall does not fail the task.
export const { runScript } = proxyActivities<Activities>({
  startToCloseTimeout: '25 hours',
  heartbeatTimeout: HEARTBEAT_TIMEOUT,
  cancellationType: 'WAIT_CANCELLATION_COMPLETED',
  retry: { initialInterval: '2s', backoffCoefficient: 2, maximumAttempts: 3 },
});
// A flow is sent again only when the platform could not be reached (the activity returns HTTP answers as results).
export const { runSourceFlow } = proxyActivities<Activities>({
  startToCloseTimeout: '25 hours',
  heartbeatTimeout: HEARTBEAT_TIMEOUT,
  cancellationType: 'WAIT_CANCELLATION_COMPLETED',
  retry: { initialInterval: '2s', backoffCoefficient: 2, maximumAttempts: 3 },
});
// The run's start and, when it is a flow, its first task, as one activity (lean-run-v2): the flow's policy, so a
// platform that cannot be reached is tried three times (BEGIN_RUN_ATTEMPTS: the third try's failure is its result).
export const { beginRun } = proxyActivities<Activities>({
  startToCloseTimeout: '25 hours',
  heartbeatTimeout: HEARTBEAT_TIMEOUT,
  cancellationType: 'WAIT_CANCELLATION_COMPLETED',
  retry: { initialInterval: '2s', backoffCoefficient: 2, maximumAttempts: 3 },
});
