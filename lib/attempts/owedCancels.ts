/**
 * Workflow cancels that a committed attempt cancel still owes (docs/attempts.md, "Cancellation and stopping"): the
 * API's cancel marks the row in its own transaction (oweWorkflowCancels), clears the mark once Temporal took the
 * workflow's cancel or had no such workflow (workflowCancelDelivered), and the start reconciler's pass sends again
 * the cancels still marked after a while (owedWorkflowCancels): an API that died between its commit and the cancel,
 * or a Temporal that was down or did not answer, no longer leaves an idle run open until attempts.idleTimeoutMs.
 */
import type { Queryable } from '../db/pool';

/** Marks the attempts' workflow cancels as owed; in the transaction that records them cancelled. */
export async function oweWorkflowCancels(c: Queryable, attemptIds: string[]): Promise<void> {
  if (attemptIds.length === 0) return;
  await c.query('UPDATE attempts SET workflow_cancel_owed_since = now() WHERE id = ANY($1::text[])', [attemptIds]);
}

/** Temporal took the attempt's workflow cancel (or had no such workflow): nothing is owed any more. */
export async function workflowCancelDelivered(db: Queryable, attemptId: string): Promise<void> {
  await db.query('UPDATE attempts SET workflow_cancel_owed_since = NULL WHERE id = $1 AND workflow_cancel_owed_since IS NOT NULL', [attemptId]);
}

/** The attempts whose workflow cancel has been owed since before `olderThan`, oldest first. */
export async function owedWorkflowCancels(db: Queryable, olderThan: Date, limit = 100): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>(
    `SELECT id FROM attempts WHERE workflow_cancel_owed_since IS NOT NULL AND workflow_cancel_owed_since < $1
      ORDER BY workflow_cancel_owed_since LIMIT $2`,
    [olderThan, limit],
  );
  return rows.map((r) => r.id);
}
