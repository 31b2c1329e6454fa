/**
 * Whether a workflow has closed for good, asked of Temporal: what a heartbeat's "not found" cannot tell (a try
 * Temporal timed out, or a workflow terminated from Temporal's side: `temporal workflow terminate`, its UI, a reset),
 * and what the closed-workflow reconciler checks before it records anything for an attempt or an approval
 * (docs/attempts.md, docs/approvals.md). Also the visibility list that reconciler starts from.
 */
import type { Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';

export interface ClosedRun {
  /** Temporal's status of the run: TERMINATED, CANCELLED, FAILED, TIMED_OUT, COMPLETED */
  status: string;
  /** the terminate's reason, when the run was terminated and one was given */
  reason: string | null;
  /** when Temporal closed the run (null only if it did not say) */
  closeTime: Date | null;
}

/**
 * The run's end, when the workflow id has no open run any more (the run `runId`, else the id's latest, is closed;
 * a reset's new run, or a continue-as-new's, still open counts as open); null while one is open; undefined when
 * Temporal did not answer within `timeoutMs` (or the client failed): the caller then assumes the workflow open.
 */
export async function closedRun(client: Client, workflowId: string, runId: string | undefined, timeoutMs: number): Promise<ClosedRun | null | undefined> {
  try {
    return await client.withDeadline(Date.now() + timeoutMs, async () => {
      const latest = await client.workflow.getHandle(workflowId).describe();
      if (latest.status.name === 'RUNNING') return null;
      const closedRunId = runId ?? latest.runId;
      const closed = runId && runId !== latest.runId ? await client.workflow.getHandle(workflowId, runId).describe() : latest;
      const status = closed.status.name;
      let reason: string | null = null;
      if (status === 'TERMINATED') {
        const { history } = await client.workflowService.getWorkflowExecutionHistory({
          namespace: client.options.namespace,
          execution: { workflowId, runId: closedRunId },
          historyEventFilterType: temporal.api.enums.v1.HistoryEventFilterType.HISTORY_EVENT_FILTER_TYPE_CLOSE_EVENT,
        });
        reason = history?.events?.[0]?.workflowExecutionTerminatedEventAttributes?.reason || null;
      }
      return { status, reason, closeTime: closed.closeTime ?? null };
    });
  } catch {
    return undefined;
  }
}

/** How a closed run reads in a log line: `terminated in Temporal (reason: …)`, `cancelled in Temporal`, … */
export function closedRunText(run: ClosedRun): string {
  const how = run.status === 'TIMED_OUT' ? 'timed out' : run.status.toLowerCase();
  return `${how} in Temporal${run.reason ? ` (reason: ${run.reason})` : ''}`;
}

/** Workflow ids per visibility query (`WorkflowId IN (…)`): the query stays short, and so does its answer. */
const IDS_PER_QUERY = 100;

/**
 * Which of `ids` (workflow ids `prefix` + id, of type `workflowType`) Temporal's visibility lists as closed (not
 * continued-as-new) more than `closedForMs` ago and matching `where` (more of the query, e.g. a search attribute still
 * saying the work is open). The caller passes only the ids its rows still have open, so a pass reads nothing of the
 * work recorded closed before, however much of it Temporal's retention still lists. A candidate list only: the caller
 * checks its rows and `closedRun` before recording anything.
 */
export async function closedWorkflowIdsAmong(
  client: Client,
  workflowType: string,
  where: string,
  prefix: string,
  ids: string[],
  closedForMs: number,
): Promise<string[]> {
  const before = new Date(Date.now() - closedForMs).toISOString();
  const found = new Set<string>();
  // the ids are the rows' (UUIDs); anything else is left out rather than quoted into the query
  const safe = ids.filter((id) => /^[0-9A-Za-z-]+$/.test(id));
  for (let i = 0; i < safe.length; i += IDS_PER_QUERY) {
    const list = safe
      .slice(i, i + IDS_PER_QUERY)
      .map((id) => `'${prefix}${id}'`)
      .join(', ');
    const query = `WorkflowType = '${workflowType}' AND WorkflowId IN (${list}) AND ${where} AND ExecutionStatus != 'Running' AND ExecutionStatus != 'ContinuedAsNew' AND CloseTime < '${before}'`;
    for await (const w of client.workflow.list({ query })) {
      if (w.workflowId.startsWith(prefix)) found.add(w.workflowId.slice(prefix.length));
    }
  }
  return [...found];
}

/** What one kind's pass did: the ids it recorded, and the ids visibility listed as closed among its open rows. */
export interface ClosedPass {
  recorded: string[];
  listed: string[];
}
