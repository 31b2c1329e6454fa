/** The bare-Temporal baseline of bench/attempts.ts: the same activity shape as attemptWorkflow, with no-op activities. */
import { proxyActivities } from '@temporalio/workflow';

export interface BareActivities {
  prepare(id: string): Promise<string>;
  run(id: string): Promise<string>;
  commit(id: string): Promise<string>;
  record(id: string): Promise<void>;
}

const acts = proxyActivities<BareActivities>({ startToCloseTimeout: '1 minute' });

export async function bareAttemptShapeWorkflow(id: string): Promise<string> {
  await acts.prepare(id);
  await acts.run(id);
  await acts.commit(id);
  await acts.record(id);
  return id;
}
