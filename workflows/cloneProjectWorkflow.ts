import { proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../activities';
import { failureMessage } from './failureMessage';

const { cloneRepository } = proxyActivities<Activities>({
  startToCloseTimeout: '30 minutes',
  heartbeatTimeout: '1 minute',
  retry: { initialInterval: '2s', backoffCoefficient: 2, maximumInterval: '1 minute', maximumAttempts: 5 },
});
const { recordCloneResult } = proxyActivities<Activities>({
  startToCloseTimeout: '30s',
  retry: { initialInterval: '1s', maximumInterval: '30s' }, // a projection write retries until Postgres is back
});

export interface CloneProjectInput {
  projectId: string;
  url: string;
  branch: string;
  dest: string;
}

/** Clones a project's remote repository into $ARMADA_HOME/repos/<id> (id `project-clone:<projectId>`). */
export async function cloneProjectWorkflow(input: CloneProjectInput): Promise<'ready' | 'failed'> {
  try {
    await cloneRepository(input);
    await recordCloneResult({ projectId: input.projectId, ok: true, path: input.dest, error: null });
    return 'ready';
  } catch (err) {
    await recordCloneResult({ projectId: input.projectId, ok: false, path: null, error: failureMessage(err) });
    return 'failed';
  }
}
