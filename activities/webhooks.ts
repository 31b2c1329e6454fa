/** The `deliver` activity: one signed POST of one event to one webhook, logged per try. */
import { ApplicationFailure, Context } from '@temporalio/activity';
import { FOREIGN_KEY_VIOLATION } from '../lib/db/pool';
import { getWebhook, recordDelivery } from '../lib/db/webhooks';
import { lazyEncryptionKey } from '../lib/keys';
import { fetchFailureReason } from '../lib/http/fetchFailure';
import { counter } from '../lib/metrics';
import { openSecret } from '../lib/secretBox';
import { SIGNATURE_HEADER, signedBody } from '../lib/webhooks/signing';
import type { ActivityDeps } from './index';
import { keepAlive } from './keepAlive';
import { untilPostgresAnswers } from './untilPostgresAnswers';

/** Kept, besides the request's own timeout, when a try waits for PostgreSQL before its request: the delivery's row. */
const RECORD_RESERVE_MS = 15_000;

/**
 * What a receiver's answer means for the delivery: null for a 2xx; `final` when asking again cannot help. A receiver
 * that refuses the request (4xx other than timeout / rate limit) will not change its mind, and neither will one that
 * redirects (redirects are not followed: the webhook's URL is the one to change), so both are given up at once.
 */
function answerError(res: Response): { error: string | null; final: boolean } {
  const status = res.status;
  if (status >= 200 && status < 300) return { error: null, final: false };
  if (status >= 300 && status < 400) {
    const location = res.headers.get('location');
    const where = location ? `a redirect to ${location.slice(0, 500)}` : 'a redirect';
    return { error: `HTTP ${status}, ${where} (not followed): register ${location ? 'that URL' : 'the final URL'} instead`, final: true };
  }
  return { error: `HTTP ${status}`, final: status >= 400 && status < 500 && status !== 408 && status !== 429 };
}

export function createWebhookActivities(deps: ActivityDeps) {
  const encryptionKey = lazyEncryptionKey(deps.config);
  const deliveries = counter(deps.metrics.registry, 'armada_webhook_deliveries_total', 'Outbound webhook delivery tries by result', ['result']);

  return {
    deliver(input: { webhookId: string; eventSeq: number }): Promise<{ attempt: number; statusCode?: number; skipped?: boolean }> {
      // a try beats while it runs (the workflow's heartbeatTimeout): a killed worker's try is retried in seconds
      return keepAlive(() => deliverOnce(input));
    },
  };

  async function deliverOnce(input: { webhookId: string; eventSeq: number }): Promise<{ attempt: number; statusCode?: number; skipped?: boolean }> {
    const attempt = Context.current().info.attempt;
    const timeoutMs = deps.config.file.webhooks?.timeoutMs ?? 10_000;
    // a PostgreSQL outage is waited out before the request leaves (activities/untilPostgresAnswers.ts): it uses up
    // none of the delivery's tries, which are the receiver's
    const loaded = await untilPostgresAnswers(
      async () => {
        const webhook = await getWebhook(deps.db, input.webhookId);
        if (!webhook?.active) return undefined;
        const { rows } = await deps.db.query<{ type: string; data: Record<string, unknown>; created_at: Date }>(
          'SELECT type, data, created_at FROM events WHERE seq = $1',
          [input.eventSeq],
        );
        return rows[0] ? { webhook, event: rows[0] } : undefined;
      },
      { reserveMs: timeoutMs + RECORD_RESERVE_MS },
    );
    if (!loaded) return { attempt, skipped: true };
    const { webhook, event } = loaded;
    const { body, signature } = signedBody(openSecret(encryptionKey(), webhook.secret), {
      event: event.type,
      timestamp: event.created_at.toISOString(),
      data: event.data,
    });
    const started = Date.now();
    let statusCode: number | null = null;
    let error: string | null = null;
    let final = false;
    try {
      const res = await fetch(webhook.url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'user-agent': `armada-webhooks/${deps.config.version}`,
          [SIGNATURE_HEADER]: signature,
          'X-Armada-Event': event.type,
          'X-Armada-Delivery': `webhook:${input.webhookId}:${input.eventSeq}`,
          'X-Armada-Attempt': String(attempt),
        },
        body,
        redirect: 'manual',
        signal: AbortSignal.timeout(timeoutMs),
      });
      statusCode = res.status;
      // the answer's body means nothing to a delivery: not read (a receiver streaming gigabytes would fill the worker)
      await res.body?.cancel().catch(() => undefined);
      const answer = answerError(res);
      error = answer.error;
      final = answer.final;
    } catch (err) {
      // the reason, not undici's "fetch failed" (lib/http/fetchFailure.ts)
      const why = fetchFailureReason(err);
      error = why === 'timed out' ? 'timed out' : `request failed: ${why}`;
    }
    const success = error === null;
    try {
      // the request was sent: its row waits for PostgreSQL here, or the failed try would send it again
      await untilPostgresAnswers(() => recordDelivery(deps.db, {
        webhookId: input.webhookId,
        eventSeq: input.eventSeq,
        eventType: event.type,
        attempt,
        statusCode,
        success,
        error,
        durationMs: Date.now() - started,
      }));
    } catch (err) {
      // the webhook was deleted while this try ran (its log went with it): a skip, as when deleted before the try
      if ((err as { code?: unknown }).code === FOREIGN_KEY_VIOLATION && !(await getWebhook(deps.db, input.webhookId))) return { attempt, skipped: true };
      throw err;
    }
    deliveries.inc({ result: success ? 'success' : 'failure' });
    if (success) return { attempt, statusCode: statusCode as number };
    throw ApplicationFailure.create({ type: final ? 'WEBHOOK_REJECTED' : 'WEBHOOK_FAILED', message: `delivery to webhook ${input.webhookId}: ${error}`, nonRetryable: final });
  }
}
