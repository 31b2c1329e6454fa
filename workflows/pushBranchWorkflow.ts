/**
 * pushBranchWorkflow (`push:<attemptId>`): create-pr's `git push` of the attempt branch, run by the worker of the
 * attempt's host (its host queue), retried while the remote is unreachable. A host with no worker fails it after
 * the schedule-to-start timeout, so the API does not wait for long.
 */
import { proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../activities';
import type { PushBranchInput } from '../activities/git/pushBranch';

export async function pushBranchWorkflow(input: PushBranchInput & { hostQueue: string }): Promise<{ commit: string }> {
  const host = proxyActivities<Activities>({
    taskQueue: input.hostQueue,
    scheduleToStartTimeout: '30 seconds',
    startToCloseTimeout: '3 minutes',
    heartbeatTimeout: '15 seconds',
    retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '10s', maximumAttempts: 4, nonRetryableErrorTypes: ['PushRejected'] },
  });
  // projectId: the activity reads the project's sealed credentials with it (no command changes: an activity's input is not replayed)
  // base: the activity refuses a branch with no changes beyond it before pushing (absent in runs started before that)
  return host.pushBranch({ repoDir: input.repoDir, branch: input.branch, projectId: input.projectId, base: input.base });
}
