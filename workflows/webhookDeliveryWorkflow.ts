/**
 * webhookDeliveryWorkflow (`webhook:<webhookId>:<eventSeq>`): delivers one event to one webhook. The retry policy is
 * the delivery policy: exponential backoff from 1 s (×2, capped at 5 min), 8 tries; a 3xx, or a 4xx other than 408/429,
 * is final. Every try leaves a row in the delivery log (the activity writes it). A delivery that gave up ends the
 * workflow as Failed (non-retryable WEBHOOK_GAVE_UP carrying the last error), after its last try is in the log, so
 * Temporal's UI and failure metrics show it; a webhook deleted or deactivated meanwhile is a completed skip.
 */
import { ApplicationFailure, patched, proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../activities';
import { failureMessage } from './failureMessage';

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
  /** true when the webhook was deleted or deactivated before the delivery */
  skipped?: boolean;
  attempts?: number;
  /** only in results of histories from before deliveries that gave up failed (patch webhook-gave-up-fails) */
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
