/**
 * Projection writes of approvalWorkflow: idempotent writes of its responses and its final status; whether its row was
 * stored (the API inserts it), or, for runs started before `approval-waits-for-row`, an upsert of the row.
 */
import { approvalStored, closeApproval, insertApproval, insertResponse } from '../lib/db/approvals';
import { lockAttemptKey } from '../lib/db/attempts';
import { withTransaction } from '../lib/db/pool';
import { approvalMetrics } from '../lib/approvals/metrics';
import type { ApprovalDecision, ApprovalFinalStatus } from '../lib/db/approvals';
import type { ApprovalRequest } from '../workflows/approvalWorkflow';
import type { ActivityDeps } from './index';

export function createApprovalActivities(deps: Pick<ActivityDeps, 'db' | 'metrics'>) {
  const { decided } = approvalMetrics(deps.metrics.registry);
  // closeApproval moves a request out of pending once; a retried activity finds it closed and counts nothing.
  const close = async (c: Parameters<typeof closeApproval>[0], id: string, status: ApprovalFinalStatus, at: string) => {
    if (await closeApproval(c, id, status, at)) return status;
    return undefined;
  };
  return {
    /**
     * Whether the approval a workflow runs was stored: the workflow is started inside the inserting transaction, before
     * the COMMIT, so this waits for that transaction's end and reads the row. False: the COMMIT failed (the request was
     * answered 503) or never came (the API died), or the row went with its attempt since — nobody can answer it.
     */
    async approvalRecordStored(input: { approvalId: string }): Promise<boolean> {
      return withTransaction(deps.db, (c) => approvalStored(c, input.approvalId));
    },

    /**
     * Runs started before `approval-waits-for-row` only. Inserts the approval row if the API did not (publishes approval.created once). False when its attempt is gone,
     * so there is no row and never will be: the API's transaction that started the workflow did not commit and the
     * attempt was deleted since, or the row committed and went with the attempt's delete (which also cancelled the
     * workflow) before this ran. The attempt's key-share lock keeps a delete from coming between check and insert.
     */
    async recordApproval(request: ApprovalRequest): Promise<boolean> {
      return withTransaction(deps.db, async (c) => {
        if (!(await lockAttemptKey(c, request.taskAttemptId))) return false;
        await insertApproval(c, request);
        return true;
      });
    },

    /** Records a response and, when it decided the request, the final status — in one transaction. */
    async recordApprovalResponse(input: {
      approvalId: string;
      approver: string;
      decision: ApprovalDecision;
      comment: string;
      respondedAt: string;
      close: ApprovalFinalStatus | null;
    }): Promise<void> {
      const closed = await withTransaction(deps.db, async (c) => {
        await insertResponse(c, input);
        return input.close ? close(c, input.approvalId, input.close, input.respondedAt) : undefined;
      });
      if (closed) decided.inc({ status: closed });
    },

    async closeApprovalRecord(input: { approvalId: string; status: ApprovalFinalStatus; at: string }): Promise<void> {
      const closed = await withTransaction(deps.db, (c) => close(c, input.approvalId, input.status, input.at));
      if (closed) decided.inc({ status: closed });
    },
  };
}
