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

/** Whether Temporal has a workflow by this id at all (running or closed); false only for its NotFound answer. */
export async function workflowExists(client: Client, workflowId: string): Promise<boolean> {
  try {
    await client.workflow.getHandle(workflowId).describe();
    return true;
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return false;
    throw err;
  }
}
