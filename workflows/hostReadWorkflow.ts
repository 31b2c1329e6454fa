/**
 * hostReadWorkflow (`host-read:<uuid>`): one read of an attempt's worktree, run by the worker of the host that holds
 * it (its host queue), for an API replica on another host. Short-lived: a host with no worker fails it quickly.
 */
import { proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../activities';
import type { WorktreeRead, WorktreeReadResult } from '../lib/attempts/readWorktree';

export async function hostReadWorkflow(input: { hostQueue: string; request: WorktreeRead }): Promise<WorktreeReadResult> {
  const host = proxyActivities<Activities>({
    taskQueue: input.hostQueue,
    scheduleToStartTimeout: '10 seconds',
    startToCloseTimeout: '1 minute',
    retry: { initialInterval: '500ms', maximumAttempts: 2 },
  });
  return host.readWorktree(input.request);
}
