/**
 * The pending approvals of attempts being deleted end with them (docs/approvals.md, "Attempt deleted"): their rows go
 * with the attempts (ON DELETE CASCADE), but their workflows would wait on for their expiry, or for ever without one,
 * and nobody would hear that they closed. Every delete of attempts (attempt, task, bulk, project) ends them twice: when
 * it begins, and again in the transaction that deletes the rows, for those requested in between.
 */
import type { Client } from '@temporalio/client';
import { approvalMetrics } from '../../lib/approvals/metrics';
import { closeApproval, pendingApprovalIdsOfAttempts } from '../../lib/db/approvals';
import { lockAttemptsToDelete, type AttemptsToDelete } from '../../lib/db/attempts';
import { withTransaction, type Queryable } from '../../lib/db/pool';
import { withinTemporalBound } from '../../lib/temporal/temporalBound';
import { requestCancel } from '../../lib/temporal/workflowHandles';
import { approvalWorkflowId } from './approvals';
import type { AttemptServiceDeps } from './attemptService';

type Deps = Pick<AttemptServiceDeps, 'db' | 'temporal' | 'metrics' | 'config'>;

/**
 * Cancels the workflows of these approvals, all of them within config.temporalInTransactionMs together (a 503 "try
 * again" past it: lib/temporal/temporalBound.ts). Cancelling a workflow that has ended is a no-op, so a delete that
 * failed here is repeated safely.
 */
async function cancelWorkflows(deps: Deps, client: Client, ids: string[]): Promise<void> {
  await withinTemporalBound(client, deps.config.temporalInTransactionMs, async () => {
    for (const id of ids) await requestCancel(client, approvalWorkflowId(id));
  });
}

/**
 * Closes the rows of these approvals as `cancelled` (with `approval.cancelled`) in `c`'s transaction, once their
 * workflows are cancelled; how many it closed. Only those still pending: one decided meanwhile (a response that
 * reached its workflow before the cancellation) keeps its decision, and was counted as such by its workflow's
 * activity; so closing them again is a no-op.
 */
async function closeCancelled(c: Queryable, ids: string[]): Promise<number> {
  const at = new Date().toISOString();
  let closed = 0;
  for (const id of ids) if (await closeApproval(c, id, 'cancelled', at)) closed++;
  return closed;
}

function countCancelled(deps: Deps, closed: number): void {
  if (closed > 0) approvalMetrics(deps.metrics.registry).decided.inc({ status: 'cancelled' }, closed);
}

/**
 * When a delete of attempts begins: ends their pending approvals, holding no transaction while Temporal answers. The
 * ids are read, their workflows cancelled (bounded), then the rows still pending closed in a short transaction. Workflows
 * first: a delete that fails between the two finds the approvals still pending when it is repeated.
 */
export async function cancelApprovalsOfAttempts(deps: Deps, attemptIds: string[]): Promise<void> {
  if (attemptIds.length === 0) return;
  const ids = await pendingApprovalIdsOfAttempts(deps.db, attemptIds);
  if (ids.length === 0) return;
  await cancelWorkflows(deps, await deps.temporal.client(), ids);
  countCancelled(deps, await withTransaction(deps.db, (c) => closeCancelled(c, ids)));
}

/**
 * The last step of every delete of attempts: runs `deleteRows` (the DELETE of the attempts, of their tasks or of their
 * project) in one transaction with the end of the approvals requested since cancelApprovalsOfAttempts. The rows the
 * delete removes are locked first, and an approval's insert waits for that lock, so every approval the delete takes
 * with it is seen and its workflow cancelled. The cancels happen before the commit, with the rows locked, within
 * config.temporalInTransactionMs together (a Temporal that does not answer in that time is a 503 "try again" and the
 * transaction rolls back, before PostgreSQL's idle_in_transaction_session_timeout would end it under the request):
 * when they or the delete fail, nothing is deleted and a repeated delete ends the approvals (cancelling an ended
 * workflow is a no-op). The client is had before the transaction, so connecting to a Temporal that does not answer
 * waits with nothing locked; one that cannot be had is needed only when there are approvals to cancel.
 */
export async function deleteWithApprovals<T>(deps: Deps, what: AttemptsToDelete, deleteRows: (c: Queryable) => Promise<T>): Promise<T> {
  const client: Client | Error = await deps.temporal.client().catch((err: unknown) => err as Error);
  const { closed, deleted } = await withTransaction(deps.db, async (c) => {
    const attemptIds = await lockAttemptsToDelete(c, what);
    const ids = await pendingApprovalIdsOfAttempts(c, attemptIds, true);
    if (ids.length > 0) {
      if (client instanceof Error) throw client; // the 503 of a Temporal not reached, as before
      await cancelWorkflows(deps, client, ids);
    }
    return { closed: await closeCancelled(c, ids), deleted: await deleteRows(c) };
  });
  countCancelled(deps, closed);
  return deleted;
}
