/**
 * How an agent's actor ended when its latest run is closed (terminated by hand, say): when it closed, and the error its
 * unfinished tasks get, which says how it ended and, for a termination, the operator's reason
 * (`agent actor terminated: <reason>`).
 */
import { WorkflowNotFoundError, type Client, type WorkflowExecutionDescription } from '@temporalio/client';

export interface ClosedActor {
  closedAt: Date;
  error: string;
}

const HOW: Record<string, string> = {
  TERMINATED: 'terminated',
  FAILED: 'failed',
  TIMED_OUT: 'timed out',
  CANCELLED: 'cancelled',
  COMPLETED: 'completed',
};

/** Null while the actor runs, and when Temporal has no actor of that id (never started, or past retention). */
export async function closedActor(client: Client, workflowId: string): Promise<ClosedActor | null> {
  let d: WorkflowExecutionDescription;
  try {
    d = await client.workflow.getHandle(workflowId).describe();
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return null;
    throw err;
  }
  if (d.status.name === 'RUNNING') return null;
  const how = HOW[d.status.name] ?? d.status.name.toLowerCase();
  const detail = await closeDetail(client, d).catch(() => undefined);
  return { closedAt: d.closeTime ?? new Date(), error: detail ? `agent actor ${how}: ${detail}` : `agent actor ${how}` };
}

/** The termination's reason or the failure's message, from the run's last event (one event read, newest first). */
async function closeDetail(client: Client, d: WorkflowExecutionDescription): Promise<string | undefined> {
  const { history } = await client.workflowService.getWorkflowExecutionHistoryReverse({
    namespace: client.options.namespace,
    execution: { workflowId: d.workflowId, runId: d.runId },
    maximumPageSize: 1,
  });
  const last = history?.events?.[0];
  return last?.workflowExecutionTerminatedEventAttributes?.reason || last?.workflowExecutionFailedEventAttributes?.failure?.message || undefined;
}
