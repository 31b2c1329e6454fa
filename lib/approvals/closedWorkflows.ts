/**
 * Approvals still `pending` whose workflow Temporal has closed without deciding them: terminated from Temporal's side
 * (`temporal workflow terminate`, its UI), or cancelled, failed or timed out as a workflow. Nothing else would ever
 * close such a request: it stayed `pending` for good, on the board and in the approvers' lists, and a response or
 * cancel reached a workflow that was gone. Every end the workflow itself reaches records the row first and completes,
 * so the candidates are the approval workflows closed otherwise (visibility) among the approvals still `pending` in
 * PostgreSQL, checked against the row (still pending) and the workflow id's latest run (a reset's new run is the
 * approval's), then recorded `expired` when the approval's expiry had passed by the close, else `cancelled`
 * (docs/approvals.md, "Closed from Temporal's side").
 */
import type { Client } from '@temporalio/client';
import type { Pool } from 'pg';
import { closeApproval } from '../db/approvals';
import { nextOpenRows, type OpenRowsWalk } from '../db/openRowsWalk';
import { closedRun, closedRunText, closedWorkflowIdsAmong, type ClosedPass, type ClosedRun } from '../temporal/closedRun';

/** The answer whether a workflow is still open, per approval. */
const DESCRIBE_TIMEOUT_MS = 5000;
const WORKFLOW_PREFIX = 'approval:';

/** How a pending approval whose workflow closed is recorded. */
export type ClosedApprovalStatus = 'expired' | 'cancelled';

/** What one pass recorded: the ids (`recorded`), each one's status, and the ids visibility listed. */
export interface ClosedApprovalPass extends ClosedPass {
  statuses: ClosedApprovalStatus[];
}

/**
 * One pass: of the approvals still `pending`, a page of at most OPEN_ROWS_PER_PASS after `walk` (the next pass goes
 * on from there), every one whose workflow visibility lists as closed other than by completing more than `closedForMs`
 * ago is recorded `expired` or `cancelled` (closedApprovalStatus; `approval.<status>`, its `reason` saying how the
 * workflow ended). `closedForMs` leaves a delete of the approval's attempt (which cancels the workflow, then closes the
 * row) the time to record its own end first. An approval recorded so is not `pending` any more, so no later pass reads
 * its workflow again, however long Temporal's retention keeps it.
 */
export async function reconcileClosedApprovalWorkflows(db: Pool, client: Client, closedForMs: number, walk: OpenRowsWalk = {}): Promise<ClosedApprovalPass> {
  const open = await nextOpenRows(db, 'approvals', `status = 'pending'`, closedForMs, walk);
  if (!open.length) return { recorded: [], statuses: [], listed: [] };
  const listed = await closedWorkflowIdsAmong(client, 'approvalWorkflow', `ExecutionStatus != 'Completed'`, WORKFLOW_PREFIX, open, closedForMs);
  const pass: ClosedApprovalPass = { recorded: [], statuses: [], listed };
  for (const id of listed) {
    const status = await closeApprovalOfClosedWorkflow(db, client, id);
    if (!status) continue;
    pass.recorded.push(id);
    pass.statuses.push(status);
  }
  return pass;
}

/**
 * How a pending approval whose workflow closed (`run`) is recorded: `expired` when its `expiresAt` had come by the
 * time Temporal closed the workflow (a terminate after the expiry, a workflow timeout at or after it: the request had
 * run out, whatever then closed the workflow), else `cancelled` (an operator stopped a request that could still have
 * been answered). A close whose time Temporal did not give counts as now.
 */
export function closedApprovalStatus(expiresAt: Date | null, run: ClosedRun): ClosedApprovalStatus {
  const closedAt = run.closeTime ?? new Date();
  return expiresAt && expiresAt.getTime() <= closedAt.getTime() ? 'expired' : 'cancelled';
}

/**
 * Records the pending approval `id` `expired` or `cancelled` (closedApprovalStatus; `decidedAt` its expiry or now)
 * when Temporal confirms its workflow has no open run (a reset's new run is the approval's); the status this call
 * recorded, false when it moved nothing. Also what a response or cancel that found the workflow gone does at once,
 * rather than answering for a request that can never be answered. Only a pending row moves: one decided meanwhile
 * keeps its decision.
 */
export async function closeApprovalOfClosedWorkflow(db: Pool, client: Client, id: string): Promise<ClosedApprovalStatus | false> {
  const run = await closedRun(client, `${WORKFLOW_PREFIX}${id}`, undefined, DESCRIBE_TIMEOUT_MS);
  if (!run) return false; // open again (reset), or no answer: the next pass looks again
  const { rows } = await db.query<{ expires_at: Date | null }>(`SELECT expires_at FROM approvals WHERE id = $1 AND status = 'pending'`, [id]);
  const row = rows[0];
  if (!row) return false;
  const status = closedApprovalStatus(row.expires_at, run);
  const at = status === 'expired' && row.expires_at ? row.expires_at : new Date();
  return (await closeApproval(db, id, status, at.toISOString(), `the workflow was ${closedRunText(run)}`)) ? status : false;
}
