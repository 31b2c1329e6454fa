/**
 * One poll of an attempt's pull request: records its state, and when the host says it was merged, completes the
 * attempt's task (status change and events in one transaction). Idempotent: a repeated merge finds the task completed.
 */
import type { Pool } from 'pg';
import type { ArmadaConfig } from '../../lib/config';
import { createCodehostClient } from '../../lib/codehost/client';
import { loadCodehostToken } from '../../lib/codehost/tokens';
import { getAttemptPullRequest, getAttemptWithProject, setPullRequestState } from '../../lib/db/codehost';
import { withTransaction } from '../../lib/db/pool';
import { updateTasks } from '../../lib/db/tasks';
import { publishTaskStatusChanged } from '../../lib/events/taskEvents';
import { resolveKeys } from '../../lib/keys';

export type PullRequestWatchState = 'open' | 'closed' | 'merged' | 'gone';

export async function checkPullRequest(deps: { db: Pool; config: ArmadaConfig }, attemptId: string): Promise<PullRequestWatchState> {
  const pr = await getAttemptPullRequest(deps.db, attemptId);
  const attempt = await getAttemptWithProject(deps.db, attemptId);
  if (!pr || !attempt) return 'gone';
  if (pr.state === 'merged') return 'merged';
  const token = await loadCodehostToken(deps.db, resolveKeys(deps.config).encryption, pr.attached_by);
  const host = await createCodehostClient(deps.config.codehost).getPull(token, pr.owner, pr.repo, pr.number);
  const merged = host.merged === true || Boolean(host.merged_at);
  if (!merged) {
    await setPullRequestState(deps.db, attemptId, host.state, null);
    return host.state;
  }
  await withTransaction(deps.db, async (tx) => {
    await setPullRequestState(tx, attemptId, 'merged', host.merged_at ? new Date(host.merged_at) : new Date());
    const [task] = await updateTasks(tx, [attempt.task_id], { status: 'completed' });
    if (task) await publishTaskStatusChanged(tx, task, task.previous_status);
  });
  return 'merged';
}
