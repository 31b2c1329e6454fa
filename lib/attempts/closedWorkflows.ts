/**
 * Attempts still `running` whose workflow Temporal has closed without them: terminated from Temporal's side
 * (`temporal workflow terminate`, its UI) while no agent ran to notice it (its worktree being made, the agent waiting
 * for a slot, a worker that was down), or failed or timed out as a workflow. Nothing else would ever end such an
 * attempt: it stayed `running` and its task `in_progress` for good. Found through Temporal's visibility (the run closed
 * with `ArmadaAttemptStatus` still `running`: every end the workflow itself records upserts it), checked against the
 * attempt's row and the workflow id's latest run (a reset's new run is the attempt's), then recorded as the
 * attempt's cancel (docs/attempts.md, Cancellation and stopping).
 */
import type { Client } from '@temporalio/client';
import type { Pool } from 'pg';
import { withTransaction } from '../db/pool';
import { appendLogs } from '../db/processes';
import { closedRun, closedRunText, closedWorkflowIds } from '../temporal/closedRun';
import { recordAttemptCancelled } from './projections';

/** The answer whether a workflow is still open, per attempt. */
const DESCRIBE_TIMEOUT_MS = 5000;
const WORKFLOW_PREFIX = 'attempt:';

/**
 * One pass: every attempt workflow closed more than `closedForMs` ago with the attempt's row still `running` (and its
 * start confirmed: a pending start is the start reconciler's) is recorded cancelled, a line on its latest process
 * saying why. `closedForMs` leaves a running agent's own try the time to see the end and record it first (its
 * heartbeat's "not found"). Returns the attempts recorded.
 */
export async function reconcileClosedAttemptWorkflows(db: Pool, client: Client, closedForMs: number): Promise<string[]> {
  const ids = await closedWorkflowIds(client, 'attemptWorkflow', `ArmadaAttemptStatus = 'running'`, WORKFLOW_PREFIX, closedForMs);
  if (!ids.length) return [];
  const { rows } = await db.query<{ id: string }>(
    `SELECT id FROM attempts WHERE id = ANY($1::text[]) AND status = 'running' AND start_pending_since IS NULL`,
    [ids],
  );
  const recorded: string[] = [];
  for (const { id } of rows) {
    const run = await closedRun(client, `${WORKFLOW_PREFIX}${id}`, undefined, DESCRIBE_TIMEOUT_MS);
    if (!run) continue; // open again (reset), or no answer: the next pass looks again
    const done = await withTransaction(db, async (c) => {
      // the attempt's row first (lock order: the attempt, then its task), still running
      const a = await c.query<{ id: string }>(`SELECT id FROM attempts WHERE id = $1 AND status = 'running' AND start_pending_since IS NULL FOR UPDATE`, [id]);
      if (!a.rows.length) return false;
      const p = await c.query<{ id: string }>('SELECT id FROM processes WHERE attempt_id = $1 ORDER BY created_at DESC, id DESC LIMIT 1', [id]);
      const processId = p.rows[0]?.id;
      if (processId) {
        const message = `the workflow was ${closedRunText(run)} while the attempt ran; the attempt is recorded cancelled`;
        await appendLogs(c, processId, id, [{ level: 'warn', message, timestamp: new Date().toISOString(), source: 'armada' }]);
      }
      return !!(await recordAttemptCancelled(c, id));
    });
    if (done) recorded.push(id);
  }
  return recorded;
}
