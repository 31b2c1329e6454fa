/**
 * The pending approvals of attempts being deleted end with them (docs/approvals.md, "Attempt deleted"): their rows go
 * with the attempts (ON DELETE CASCADE), but their workflows would wait on for their expiry, or for ever without one,
 * and nobody would hear that they closed. Every delete of attempts (attempt, task, bulk, project) ends them twice: when
 * it begins, and again in the transaction that deletes the rows, for those requested in between.
 */
import { approvalMetrics } from '../../lib/approvals/metrics';
import { closeApproval, pendingApprovalIdsOfAttempts } from '../../lib/db/approvals';
import { lockAttemptsToDelete, type AttemptsToDelete } from '../../lib/db/attempts';
import { withTransaction, type Queryable } from '../../lib/db/pool';
import { requestCancel } from '../../lib/temporal/workflowHandles';
import { approvalWorkflowId } from './approvals';
import type { AttemptServiceDeps } from './attemptService';

type Deps = Pick<AttemptServiceDeps, 'db' | 'temporal' | 'metrics'>;

/**
 * Cancels the workflows of these pending approvals, then closes their rows as `cancelled` (with `approval.cancelled`)
 * in `c`'s transaction; how many rows it closed. Workflows first: a delete that fails between the two finds the
 * approvals still pending when it is repeated, and cancelling a workflow that has ended is a no-op.
 */
async function cancelApprovals(deps: Deps, c: Queryable, ids: string[]): Promise<number> {
  if (ids.length === 0) return 0;
  const client = await deps.temporal.client();
  for (const id of ids) await requestCancel(client, approvalWorkflowId(id));
  const at = new Date().toISOString();
  let closed = 0;
  // one decided meanwhile (a response that reached its workflow before the cancellation) keeps its decision, and was
  // counted as such by its workflow's activity
  for (const id of ids) if (await closeApproval(c, id, 'cancelled', at)) closed++;
  return closed;
}

function countCancelled(deps: Deps, closed: number): void {
  if (closed > 0) approvalMetrics(deps.metrics.registry).decided.inc({ status: 'cancelled' }, closed);
}

/** When a delete of attempts begins: ends their pending approvals, holding no lock while Temporal answers. */
export async function cancelApprovalsOfAttempts(deps: Deps, attemptIds: string[]): Promise<void> {
  if (attemptIds.length === 0) return;
  countCancelled(deps, await withTransaction(deps.db, async (c) => cancelApprovals(deps, c, await pendingApprovalIdsOfAttempts(c, attemptIds))));
}

/**
 * The last step of every delete of attempts: runs `deleteRows` (the DELETE of the attempts, of their tasks or of their
 * project) in one transaction with the end of the approvals requested since cancelApprovalsOfAttempts. The rows the
 * delete removes are locked first, and an approval's insert waits for that lock, so every approval the delete takes
 * with it is seen and its workflow cancelled. The cancels happen before the commit: when they or the delete fail,
 * nothing is deleted and a repeated delete ends the approvals (cancelling an ended workflow is a no-op).
 */
export async function deleteWithApprovals<T>(deps: Deps, what: AttemptsToDelete, deleteRows: (c: Queryable) => Promise<T>): Promise<T> {
  const { closed, deleted } = await withTransaction(deps.db, async (c) => {
    const attemptIds = await lockAttemptsToDelete(c, what);
    const closed = await cancelApprovals(deps, c, await pendingApprovalIdsOfAttempts(c, attemptIds, true));
    return { closed, deleted: await deleteRows(c) };
  });
  countCancelled(deps, closed);
  return deleted;
}
