/**
 * webhookDeliveryWorkflow (`webhook:<webhookId>:<eventSeq>`): delivers one event to one webhook. The `deliver`
 * activity is the delivery policy (lib/webhooks/deliveryPolicy.ts): it holds a try back while the webhook's breaker is
 * open, sets the pause before the next try (1 s ×2, capped at 5 min, from its real try count: nextRetryDelay) and gives
 * up (WEBHOOK_GAVE_UP) after webhooks.maxTries tries or webhooks.retryForMs; so the retry policy here retries without
 * a limit, its own backoff used only for failures the activity did not time (a worker lost, an unexpected error). A
 * 3xx, or a 4xx other than 408/429, is final. Every try leaves a row in the delivery log (the activity writes it); a
 * try held back leaves none. A delivery that gave up ends the workflow as Failed (non-retryable WEBHOOK_GAVE_UP
 * carrying the last error), after its last try is in the log, so Temporal's UI and failure metrics show it; a webhook
 * deleted or deactivated meanwhile is a completed skip.
 */
import { RetryState } from '@temporalio/common';
import { ActivityFailure, ApplicationFailure, patched, proxyActivities, sleep } from '@temporalio/workflow';
import type { Activities } from '../activities';
import type { DeliverResult, RetryDetails } from '../activities/webhooks';
import { WEBHOOK_GAVE_UP } from '../lib/webhooks/deliveryPolicy';
import { failureMessage } from './failureMessage';

export { WEBHOOK_GAVE_UP };

/** Above the longest pause a try asks for (webhooks.backoffMaxMs, at most 1 h, and its 10 % jitter): a bound, not a policy. */
const MAX_PAUSE_MS = 2 * 3_600_000;

const { deliver } = proxyActivities<Activities>({
  startToCloseTimeout: '2 minutes',
  // a backstop above webhooks.retryForMs' largest value (30 days): a try failing in a way the activity does not time
  // (an unexpected error) is otherwise retried without end
  scheduleToCloseTimeout: '31 days',
  // a try beats while it waits for the receiver: a worker killed mid-try is noticed in seconds, not minutes
  heartbeatTimeout: '10 seconds',
  retry: {
    initialInterval: '1s',
    backoffCoefficient: 2,
    maximumInterval: '5 minutes',
    // no maximumAttempts (unlimited): the activity gives up (WEBHOOK_GAVE_UP) by webhooks.maxTries and retryForMs
    nonRetryableErrorTypes: ['WEBHOOK_REJECTED', WEBHOOK_GAVE_UP],
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

export async function webhookDeliveryWorkflow(input: WebhookDeliveryInput): Promise<WebhookDeliveryResult> {
  try {
    const r = await deliverUnderTodaysPolicy(input);
    return r.skipped ? { delivered: false, skipped: true } : { delivered: true, attempts: r.attempt };
  } catch (err) {
    const error = failureMessage(err);
    if (patched('webhook-gave-up-fails')) throw ApplicationFailure.create({ type: WEBHOOK_GAVE_UP, message: `gave up: ${error}`, nonRetryable: true });
    return { delivered: false, error };
  }
}

/**
 * `deliver`, and once more when its tries ran out under a retry policy of 8 attempts. Temporal keeps the retry policy
 * an activity was scheduled with, so a delivery whose activity was scheduled before the delivery policy moved into
 * the activity (webhooks.maxTries, webhooks.retryForMs, the breaker) would otherwise end after 8 attempts, held-back
 * tries included; today's policy has no attempt limit, so running out of attempts means exactly that. The activity
 * scheduled again has today's retry policy and goes on from the delivery log (its tries are numbered and counted
 * there), after the pause the last try asked for. Patch `webhook-old-retry-policy-continues`: histories that ended
 * after 8 attempts replay as they ran.
 */
async function deliverUnderTodaysPolicy(input: WebhookDeliveryInput): Promise<DeliverResult> {
  try {
    return await deliver(input);
  } catch (err) {
    if (!(err instanceof ActivityFailure && err.retryState === RetryState.MAXIMUM_ATTEMPTS_REACHED)) throw err;
    if (!patched('webhook-old-retry-policy-continues')) throw err;
    const pauseMs = retryInMs(err.cause);
    if (pauseMs > 0) await sleep(pauseMs);
    return deliver(input);
  }
}

/** The pause a failed try asked for (its nextRetryDelay, which Temporal does not hand to the workflow: the details). */
function retryInMs(cause: unknown): number {
  const details = cause instanceof ApplicationFailure ? (cause.details?.[0] as Partial<RetryDetails> | undefined) : undefined;
  const ms = details?.retryInMs;
  return typeof ms === 'number' && Number.isFinite(ms) ? Math.min(Math.max(0, ms), MAX_PAUSE_MS) : 0;
}
