/**
 * The bare-Temporal baseline of bench/scheduler.ts: what any scheduled run on Temporal does before a flow request
 * can leave, with nothing of Armada's: the schedule starts the workflow, its first workflow task schedules one
 * activity, and the activity sends the request (the same HTTP client as Armada's flow tasks).
 */
import { proxyActivities } from '@temporalio/workflow';

export interface BareFlowActivities {
  postFlow(input: string): Promise<void>;
}

const { postFlow } = proxyActivities<BareFlowActivities>({ startToCloseTimeout: '1 minute' });

export async function bareScheduledFlowWorkflow(input: string): Promise<void> {
  await postFlow(input);
}
