/**
 * TEST ONLY: webhookDeliveryWorkflow as it was before the delivery policy moved into the `deliver` activity (commit
 * c7fc922's parent): its activity retried at most 8 times. A test worker runs it so that a delivery's activity is
 * scheduled with that retry policy, as one under way at a deploy was, before today's workflow takes the delivery
 * over (test/integration/webhookOldRetryPolicy.test.ts). Registered only by that test's worker (never in
 * workflows/index.ts); the code below is the old file's, its imports adjusted.
 */
import { ApplicationFailure, patched, proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../../activities';
import { failureMessage } from '../../workflows/failureMessage';

const { deliver } = proxyActivities<Activities>({
  startToCloseTimeout: '2 minutes',
  // a try beats while it waits for the receiver: a worker killed mid-try is noticed in seconds, not minutes
  heartbeatTimeout: '10 seconds',
  retry: {
    initialInterval: '1s',
    backoffCoefficient: 2,
    maximumInterval: '5 minutes',
    maximumAttempts: 8,
    nonRetryableErrorTypes: ['WEBHOOK_REJECTED'],
  },
});

export interface WebhookDeliveryInput {
  webhookId: string;
  eventSeq: number;
}

export interface WebhookDeliveryResult {
  delivered: boolean;
  skipped?: boolean;
  attempts?: number;
  error?: string;
}

export const WEBHOOK_GAVE_UP = 'WEBHOOK_GAVE_UP';

export async function webhookDeliveryWorkflow(input: WebhookDeliveryInput): Promise<WebhookDeliveryResult> {
  try {
    const r = await deliver(input);
    return r.skipped ? { delivered: false, skipped: true } : { delivered: true, attempts: r.attempt };
  } catch (err) {
    const error = failureMessage(err);
    if (patched('webhook-gave-up-fails')) throw ApplicationFailure.create({ type: WEBHOOK_GAVE_UP, message: `gave up: ${error}`, nonRetryable: true });
    return { delivered: false, error };
  }
}
