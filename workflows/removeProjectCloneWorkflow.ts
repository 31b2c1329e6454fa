/** removeProjectCloneWorkflow (`project-clone-remove:<projectId>`): remove a deleted project's managed clone. */
import { proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../activities';
import type { CloneRemoval, RemoveProjectCloneInput } from '../activities/git/removeProjectClone';

// Shared queue, no schedule-to-start bound: managed clones sit where every worker reaches them (docs/task-service.md),
// so any worker may do it whenever one is up; the janitor of a worker's start does it too. Heartbeat 15 s as an
// attempt's removal (the activity beats every 2 s): a try lost with its worker (kill -9) is tried again on another
// worker ~15 s later; without it that waited for the 10-minute start-to-close (session 53). A timeout is not part of
// replay's match: recorded histories replay unchanged.
const { removeProjectClone } = proxyActivities<Activities>({
  startToCloseTimeout: '10 minutes', // deleting a large clone's files
  heartbeatTimeout: '15 seconds',
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '30s', maximumAttempts: 5 },
});

export async function removeProjectCloneWorkflow(input: RemoveProjectCloneInput): Promise<CloneRemoval> {
  return removeProjectClone(input);
}
