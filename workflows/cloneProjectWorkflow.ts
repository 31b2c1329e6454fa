import { patched, proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../activities';
import { failureMessage } from './failureMessage';
import { CLONE_HEARTBEAT_TIMEOUT_MS, CLONE_RETRY_INITIAL_INTERVAL_MS } from './projectCloneMessages';

const cloneActivities = (heartbeatTimeoutMs: number, retryInitialIntervalMs: number) =>
  proxyActivities<Activities>({
    startToCloseTimeout: '30 minutes',
    heartbeatTimeout: heartbeatTimeoutMs,
    retry: { initialInterval: retryInitialIntervalMs, backoffCoefficient: 2, maximumInterval: '1 minute', maximumAttempts: 5 },
  });
const { recordCloneResult, projectRecordStored } = proxyActivities<Activities>({
  startToCloseTimeout: '30s',
  retry: { initialInterval: '1s', maximumInterval: '30s' }, // a projection write retries until Postgres is back
});
// as removeProjectCloneWorkflow's: deleting a large clone's files takes a while; a try lost with its worker is
// tried again after the 15 s heartbeat timeout
const { removeProjectClone } = proxyActivities<Activities>({
  startToCloseTimeout: '10 minutes',
  heartbeatTimeout: '15 seconds',
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '30s', maximumAttempts: 5 },
});

export interface CloneProjectInput {
  projectId: string;
  url: string;
  branch: string;
  dest: string;
  /**
   * How soon a try whose worker died is timed out and tried again (config `projects.cloneHeartbeatTimeoutMs`); absent
   * in histories recorded before it was set, which keep their 1 minute (a timeout is not part of replay's match).
   */
  heartbeatTimeoutMs?: number;
  /** The pause before a failed clone's second try (config `projects.cloneRetryInitialIntervalMs`); absent: 2 s, as before. */
  retryInitialIntervalMs?: number;
}

/**
 * Clones a project's remote repository into $ARMADA_HOME/repos/<id> (id `project-clone:<projectId>`). A project
 * deleted while its repository was cloned finds no row to record the result in: the clone just made is removed here
 * ('removed'), since the delete's own removal may have run before it existed. The API starts it inside the transaction
 * that inserts the row, before its COMMIT: it first waits for that transaction's end and clones nothing when there is no
 * row then ('gone': it never committed, or the project was deleted before its clone began; `project-clone-waits-for-row`).
 */
export async function cloneProjectWorkflow(input: CloneProjectInput): Promise<'ready' | 'failed' | 'removed' | 'gone'> {
  if (patched('project-clone-waits-for-row') && !(await projectRecordStored({ projectId: input.projectId }))) return 'gone';
  const { cloneRepository } = cloneActivities(
    input.heartbeatTimeoutMs ?? CLONE_HEARTBEAT_TIMEOUT_MS,
    input.retryInitialIntervalMs ?? CLONE_RETRY_INITIAL_INTERVAL_MS,
  );
  let recorded: boolean | undefined;
  try {
    await cloneRepository({ projectId: input.projectId, url: input.url, branch: input.branch, dest: input.dest });
    recorded = await recordCloneResult({ projectId: input.projectId, ok: true, path: input.dest, error: null });
  } catch (err) {
    await recordCloneResult({ projectId: input.projectId, ok: false, path: null, error: failureMessage(err) });
    return 'failed';
  }
  // no patch needed: histories recorded before this change hold `undefined` as recordCloneResult's result
  if (recorded !== false) return 'ready';
  await removeProjectClone({ projectId: input.projectId, dest: input.dest });
  return 'removed';
}
