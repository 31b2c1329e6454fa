/** Projection writes of approvalWorkflow: idempotent upserts of the approval row, its responses and its final status. */
import { closeApproval, insertApproval, insertResponse } from '../lib/db/approvals';
import { withTransaction } from '../lib/db/pool';
import type { ApprovalDecision, ApprovalFinalStatus, ApprovalRequest } from '../workflows/approvalWorkflow';
import type { ActivityDeps } from './index';

export function createApprovalActivities(deps: Pick<ActivityDeps, 'db'>) {
  return {
    /** Inserts the approval row if the API did not (publishes approval.created once). */
    async recordApproval(request: ApprovalRequest): Promise<void> {
      await withTransaction(deps.db, async (c) => {
        await insertApproval(c, request);
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
      await withTransaction(deps.db, async (c) => {
        await insertResponse(c, input);
        if (input.close) await closeApproval(c, input.approvalId, input.close, input.respondedAt);
      });
    },

    async closeApprovalRecord(input: { approvalId: string; status: ApprovalFinalStatus; at: string }): Promise<void> {
      await withTransaction(deps.db, async (c) => {
        await closeApproval(c, input.approvalId, input.status, input.at);
      });
    },
  };
}
