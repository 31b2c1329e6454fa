/**
 * The delivery policy of outbound webhooks: how long a delivery tries, how often, and when a webhook's breaker opens
 * (`webhooks.*` in the config file). The deliver activity (activities/webhooks.ts) applies it; the workflow's retry
 * policy only carries out the pauses this computes (nextRetryDelay).
 */
import type { FileConfig } from '../config';

export interface DeliveryPolicy {
  /** one request's timeout */
  timeoutMs: number;
  /** real tries (requests sent) after which a delivery gives up */
  maxTries: number;
  /** a delivery gives up once its event was committed this long ago */
  retryForMs: number;
  /** consecutive failed tries of a webhook that open its breaker */
  openAfterFailures: number;
  backoffInitialMs: number;
  backoffMaxMs: number;
}

export const DEFAULT_DELIVERY_POLICY: DeliveryPolicy = {
  timeoutMs: 10_000,
  maxTries: 16,
  retryForMs: 24 * 3_600_000,
  openAfterFailures: 3,
  backoffInitialMs: 1000,
  backoffMaxMs: 300_000,
};

export function deliveryPolicy(file: FileConfig['webhooks']): DeliveryPolicy {
  const p = { ...DEFAULT_DELIVERY_POLICY, ...file };
  return { ...p, backoffMaxMs: Math.max(p.backoffMaxMs, p.backoffInitialMs) };
}

/** The pause after a delivery's `tries`-th failed try (and a breaker's after its `tries`-th failed probe): ×2 from the initial, capped. */
export function backoffMs(policy: DeliveryPolicy, tries: number): number {
  return Math.min(policy.backoffMaxMs, policy.backoffInitialMs * 2 ** Math.max(0, Math.min(tries - 1, 40)));
}

/**
 * A pause spread a little, so the deliveries a breaker held do not all wake in the same instant: up to 10 % of the
 * pause (at least 50 ms) on top of it.
 */
export function withJitter(ms: number, random: () => number = Math.random): number {
  return Math.round(ms + random() * Math.max(50, ms / 10));
}

/** The failure type of a delivery that gave up (the workflow's, and the activity's last try's). */
export const WEBHOOK_GAVE_UP = 'WEBHOOK_GAVE_UP';
