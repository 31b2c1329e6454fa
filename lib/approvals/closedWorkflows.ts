/**
 * Approvals still `pending` whose workflow Temporal has closed without deciding them: terminated from Temporal's side
 * (`temporal workflow terminate`, its UI), or cancelled, failed or timed out as a workflow. Nothing else would ever
 * close such a request: it stayed `pending` for good, on the board and in the approvers' lists, and a response or
 * cancel reached a workflow that was gone. Every end the workflow itself reaches records the row first and completes,
 * so the candidates are the approval workflows closed otherwise (visibility), checked against the row (still pending)
 * and the workflow id's latest run (a reset's new run is the approval's), then recorded `cancelled`
 * (docs/approvals.md, "Closed from Temporal's side").
 */
import type { Client } from '@temporalio/client';
import type { Pool } from 'pg';
import { closeApproval } from '../db/approvals';
import { closedRun, closedRunText, closedWorkflowIds } from '../temporal/closedRun';

/** The answer whether a workflow is still open, per approval. */
const DESCRIBE_TIMEOUT_MS = 5000;
const WORKFLOW_PREFIX = 'approval:';

/**
 * One pass: every approval workflow closed more than `closedForMs` ago other than by completing, with its row still
 * `pending`, is recorded `cancelled` (`approval.cancelled`, its `reason` saying how the workflow ended). `closedForMs`
 * leaves a delete of the approval's attempt (which cancels the workflow, then closes the row) the time to record its own
 * end first. Returns the approvals recorded.
 */
export async function reconcileClosedApprovalWorkflows(db: Pool, client: Client, closedForMs: number): Promise<string[]> {
  const ids = await closedWorkflowIds(client, 'approvalWorkflow', `ExecutionStatus != 'Completed'`, WORKFLOW_PREFIX, closedForMs);
  if (!ids.length) return [];
  const { rows } = await db.query<{ id: string }>(`SELECT id FROM approvals WHERE id = ANY($1::text[]) AND status = 'pending'`, [ids]);
  const recorded: string[] = [];
  for (const { id } of rows) if (await closeApprovalOfClosedWorkflow(db, client, id)) recorded.push(id);
  return recorded;
}

/**
 * Records the pending approval `id` cancelled when Temporal confirms its workflow has no open run (a reset's new run
 * is the approval's); whether this call moved the row. Also what a response or cancel that found the workflow gone
 * does at once, rather than answering for a request that can never be answered. Only a pending row moves: one
 * decided meanwhile keeps its decision.
 */
export async function closeApprovalOfClosedWorkflow(db: Pool, client: Client, id: string): Promise<boolean> {
  const run = await closedRun(client, `${WORKFLOW_PREFIX}${id}`, undefined, DESCRIBE_TIMEOUT_MS);
  if (!run) return false; // open again (reset), or no answer: the next pass looks again
  return closeApproval(db, id, 'cancelled', new Date().toISOString(), `the workflow was ${closedRunText(run)}`);
}
