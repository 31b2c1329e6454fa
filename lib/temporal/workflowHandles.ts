/**
 * Questions the API asks of a workflow by id, where "no such workflow" is an answer and not an error: a run that
 * has ended (or never started) is neither running nor in need of a cancel.
 */
import { WorkflowNotFoundError, type Client } from '@temporalio/client';

/** Requests the workflow's cancellation; false when Temporal has no such workflow open (it ended, or never started). */
export async function requestCancel(client: Client, workflowId: string): Promise<boolean> {
  try {
    await client.workflow.getHandle(workflowId).cancel();
    return true;
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return false;
    throw err;
  }
}

/** Whether the workflow is running now (false: ended, or never started). */
export async function isRunning(client: Client, workflowId: string): Promise<boolean> {
  try {
    return (await client.workflow.getHandle(workflowId).describe()).status.name === 'RUNNING';
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return false;
    throw err;
  }
}

/**
 * The status of the workflow's latest run (`RUNNING`, `COMPLETED`, `FAILED`, `CANCELLED`, `TERMINATED`,
 * `CONTINUED_AS_NEW`, `TIMED_OUT`), or null when Temporal has no workflow by this id (its NotFound answer).
 */
export async function workflowStatus(client: Client, workflowId: string): Promise<string | null> {
  try {
    return (await client.workflow.getHandle(workflowId).describe()).status.name;
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return null;
    throw err;
  }
}
