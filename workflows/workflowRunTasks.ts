/** The task runners of workflowRunWorkflow, one activity per task, with their policies written out. */
import { proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../activities';

// Scripts are not idempotent: one attempt. The script's own timeout (per task) is enforced by the activity, which
// heartbeats every second, so a lost worker is noticed in seconds and a stop reaches the process at once.
export const { runScript } = proxyActivities<Activities>({
  startToCloseTimeout: '25 hours',
  heartbeatTimeout: '3s',
  cancellationType: 'WAIT_CANCELLATION_COMPLETED',
  retry: { maximumAttempts: 1 },
});
// A flow run is retried only when the platform could not be reached (the activity returns HTTP answers as results).
export const { runSourceFlow } = proxyActivities<Activities>({
  startToCloseTimeout: '25 hours',
  heartbeatTimeout: '3s',
  cancellationType: 'WAIT_CANCELLATION_COMPLETED',
  retry: { initialInterval: '2s', backoffCoefficient: 2, maximumAttempts: 3 },
});
// The run's start and, when it is a flow, its first task, as one activity (lean-run-v2): the flow's policy, so a
// platform that cannot be reached is tried three times (BEGIN_RUN_ATTEMPTS: the third try's failure is its result).
export const { beginRun } = proxyActivities<Activities>({
  startToCloseTimeout: '25 hours',
  heartbeatTimeout: '3s',
  cancellationType: 'WAIT_CANCELLATION_COMPLETED',
  retry: { initialInterval: '2s', backoffCoefficient: 2, maximumAttempts: 3 },
});
