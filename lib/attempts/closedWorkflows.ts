/**
 * Attempts still `running` whose workflow Temporal has closed without them: terminated from Temporal's side
 * (`temporal workflow terminate`, its UI) while no agent ran to notice it (its worktree being made, the agent waiting
 * for a slot, a worker that was down), or failed or timed out as a workflow. Nothing else would ever end such an
 * attempt: it stayed `running` and its task `in_progress` for good. Found through Temporal's visibility (the run closed
 * with `ArmadaAttemptStatus` still `running`: every end the workflow itself records upserts it) among the attempts
 * still `running` in PostgreSQL, checked against the attempt's row and the workflow id's latest run (a reset's new run
 * is the attempt's), then recorded as the attempt's cancel (docs/attempts.md, Cancellation and stopping).
 */
import type { Client } from '@temporalio/client';
import type { Pool } from 'pg';
import { nextOpenRows, type OpenRowsWalk } from '../db/openRowsWalk';
import { withTransaction } from '../db/pool';
import type { AttemptRow } from '../db/attempts';
import { appendLogs } from '../db/processes';
import { closedRun, closedRunText, closedWorkflowIdsAmong, type ClosedPass, type ClosedRun } from '../temporal/closedRun';
import { recordAttemptCancelled } from './projections';

/** The answer whether a workflow is still open, per attempt. */
const DESCRIBE_TIMEOUT_MS = 5000;
const WORKFLOW_PREFIX = 'attempt:';

/**
 * One pass: of the attempts still `running` with their start confirmed (a pending start is the start reconciler's,
 * which records a closed one the same way), a page of at most OPEN_ROWS_PER_PASS after `walk` (the next pass goes on
 * from there), every one whose workflow visibility lists as closed more than `closedForMs` ago is recorded cancelled,
 * a line on its latest process saying why. `closedForMs` leaves a running agent's own try the time to see the end and
 * record it first (its heartbeat's "not found"). An attempt recorded so is not `running` any more, so no later pass
 * asks Temporal about it again. Returns the attempts recorded (with each one's agent, `llms`, for the metrics), and
 * those visibility listed.
 */
export async function reconcileClosedAttemptWorkflows(db: Pool, client: Client, closedForMs: number, walk: OpenRowsWalk = {}): Promise<ClosedPass & { llms: string[] }> {
  const open = await nextOpenRows(db, 'attempts', `status = 'running' AND start_pending_since IS NULL`, closedForMs, walk);
  if (!open.length) return { recorded: [], listed: [], llms: [] };
  const listed = await closedWorkflowIdsAmong(client, 'attemptWorkflow', `ArmadaAttemptStatus = 'running'`, WORKFLOW_PREFIX, open, closedForMs);
  const recorded: string[] = [];
  const llms: string[] = [];
  for (const id of listed) {
    const run = await closedRun(client, `${WORKFLOW_PREFIX}${id}`, undefined, DESCRIBE_TIMEOUT_MS);
    if (!run) continue; // open again (reset), or no answer: the next pass looks again
    const a = await recordClosedAttempt(db, id, run);
    if (!a) continue;
    recorded.push(id);
    llms.push(a.llm);
  }
  return { recorded, listed, llms };
}

/**
 * Records the attempt `id`, still `running` with its start confirmed, cancelled because its workflow closed (`run`,
 * as closedRun read it) without it, in one transaction: the line `the workflow was <how> while the attempt ran; the
 * attempt is recorded cancelled` on its latest process, the cancel (its processes, attempt.cancelled, the task
 * settled). The attempt as recorded, when this call recorded it (undefined: no longer running, or its start still pending).
 */
export async function recordClosedAttempt(db: Pool, id: string, run: ClosedRun): Promise<AttemptRow | undefined> {
  return withTransaction(db, async (c) => {
    // the attempt's row first (lock order: the attempt, then its task), still running
    const a = await c.query<{ id: string }>(`SELECT id FROM attempts WHERE id = $1 AND status = 'running' AND start_pending_since IS NULL FOR UPDATE`, [id]);
    if (!a.rows.length) return undefined;
    const p = await c.query<{ id: string }>('SELECT id FROM processes WHERE attempt_id = $1 ORDER BY created_at DESC, id DESC LIMIT 1', [id]);
    const processId = p.rows[0]?.id;
    if (processId) {
      const message = `the workflow was ${closedRunText(run)} while the attempt ran; the attempt is recorded cancelled`;
      await appendLogs(c, processId, id, [{ level: 'warn', message, timestamp: new Date().toISOString(), source: 'armada' }]);
    }
    return recordAttemptCancelled(c, id);
  });
}
