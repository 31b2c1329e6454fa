/** removeProjectCloneWorkflow (`project-clone-remove:<projectId>`): remove a deleted project's managed clone. */
import { proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../activities';
import type { CloneRemoval, RemoveProjectCloneInput } from '../activities/git/removeProjectClone';

// Shared queue, no schedule-to-start bound: managed clones sit where every worker reaches them (docs/task-service.md),
// so any worker may do it whenever one is up; the janitor of a worker's start does it too.
const { removeProjectClone } = proxyActivities<Activities>({
  startToCloseTimeout: '10 minutes', // deleting a large clone's files
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '30s', maximumAttempts: 5 },
});

export async function removeProjectCloneWorkflow(input: RemoveProjectCloneInput): Promise<CloneRemoval> {
  return removeProjectClone(input);
}
