/**
 * The `deliver` activity: one try of one event to one webhook, held back while the webhook's breaker is open, logged
 * per try. The activity is the delivery policy (lib/webhooks/deliveryPolicy.ts): it numbers the tries from the
 * delivery log, sets the pause before the next one (nextRetryDelay) and decides when the delivery gives up; the
 * workflow's retry policy retries without a limit. See docs/webhooks.md#delivery-durable-and-retried.
 */
import { ApplicationFailure, Context } from '@temporalio/activity';
import { ApplicationFailureCategory } from '@temporalio/common';
import { FOREIGN_KEY_VIOLATION } from '../lib/db/pool';
import { claimProbe, getReceiver, recordReceiverAnswered, recordReceiverFailure, type ReceiverRow } from '../lib/db/webhookReceivers';
import { deliveryTries, getWebhook, recordDelivery, type WebhookRow } from '../lib/db/webhooks';
import { lazyEncryptionKey } from '../lib/keys';
import { badPortOf, badPortReason } from '../lib/http/badPorts';
import { fetchFailureReason, isBadPortFailure } from '../lib/http/fetchFailure';
import { counter } from '../lib/metrics';
import { openSecret } from '../lib/secretBox';
import { redactUrlCredentials } from '../lib/urlCredentials';
import { WEBHOOK_GAVE_UP, backoffMs, deliveryPolicy, withJitter } from '../lib/webhooks/deliveryPolicy';
import { SIGNATURE_HEADER, signedBody } from '../lib/webhooks/signing';
import type { ActivityDeps } from './index';
import { keepAlive } from './keepAlive';
import { untilPostgresAnswers } from './untilPostgresAnswers';

/** Kept, besides the request's own timeout, when a try waits for PostgreSQL before its request: the delivery's row. */
const RECORD_RESERVE_MS = 15_000;

export interface DeliveryInput {
  webhookId: string;
  eventSeq: number;
}

/** `attempt`: the number of the try that delivered (the log's and X-Armada-Attempt's); 0 for a skip. */
export interface DeliverResult {
  attempt: number;
  statusCode?: number;
  skipped?: boolean;
}

/** A delivery whose webhook was deleted or deactivated: nothing to send, and nothing failed. */
const SKIPPED: DeliverResult = { attempt: 0, skipped: true };

/**
 * The details of a try to retry: its pause again, for the workflow (Temporal gives it the failure without its
 * nextRetryDelay), which needs it when the retry policy of an activity scheduled before today's ran out of attempts.
 */
export interface RetryDetails {
  retryInMs: number;
}

interface Loaded {
  webhook: WebhookRow;
  event: { type: string; data: Record<string, unknown>; created_at: Date };
  /** the delivery's tries in the log: the last one's number, and how many count towards maxTries */
  tries: { last: number; counted: number };
  receiver: ReceiverRow | undefined;
}

interface Answer {
  statusCode: number | null;
  /** null for a 2xx */
  error: string | null;
  /** asking again cannot help (3xx, 4xx other than 408/429) */
  final: boolean;
  durationMs: number;
}

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
    // the receiver's Location may carry credentials (its own): stored in the try's row and the failure as ***
    const where = location ? `a redirect to ${redactUrlCredentials(location.slice(0, 500))}` : 'a redirect';
    return { error: `HTTP ${status}, ${where} (not followed): register ${location ? 'that URL' : 'the final URL'} instead`, final: true };
  }
  return { error: `HTTP ${status}`, final: status >= 400 && status < 500 && status !== 408 && status !== 429 };
}

export function createWebhookActivities(deps: ActivityDeps) {
  const encryptionKey = lazyEncryptionKey(deps.config);
  const policy = deliveryPolicy(deps.config.file.webhooks);
  const deliveries = counter(deps.metrics.registry, 'armada_webhook_deliveries_total', 'Outbound webhook delivery tries by result', ['result']);
  const deferrals = counter(
    deps.metrics.registry,
    'armada_webhook_deliveries_deferred_total',
    "Outbound webhook deliveries held back without a request: the webhook's breaker was open and another delivery had the probe",
  );

  return {
    deliver(input: DeliveryInput): Promise<DeliverResult> {
      // The number of a try whose request left but whose row was never written (its worker was killed) comes back in
      // the heartbeat details, so the next try does not reuse it: reported as the request leaves (the first beat of
      // a try goes out at once), and with every beat. A try beats while it runs (the workflow's heartbeatTimeout): a
      // killed worker's try is retried in seconds.
      const ctx = Context.current();
      const carried = ctx.info.heartbeatDetails;
      let sent = typeof carried === 'number' ? carried : 0;
      return keepAlive(
        () =>
          deliverOnce(input, sent, (n) => {
            sent = n;
            ctx.heartbeat(n);
          }),
        { details: () => sent },
      );
    },
  };

  async function deliverOnce(input: DeliveryInput, sentBefore: number, sending: (attempt: number) => void): Promise<DeliverResult> {
    const delivery = `webhook:${input.webhookId}:${input.eventSeq}`;
    // a PostgreSQL outage is waited out before the request leaves (activities/untilPostgresAnswers.ts): it uses up
    // none of the delivery's tries, which are the receiver's
    const loaded = await untilPostgresAnswers(() => load(input), { reserveMs: policy.timeoutMs + RECORD_RESERVE_MS });
    if (!loaded) return SKIPPED;
    // a URL on a port fetch never connects to (registered before the API refused them) cannot be delivered, ever:
    // final at once, without a request and whatever the breaker says, instead of retried for webhooks.retryForMs
    const badPort = badPortOf(new URL(loaded.webhook.url));
    if (badPort !== undefined) return refuseBadPort(input, loaded, Math.max(loaded.tries.last, sentBefore) + 1, badPort);
    // retryForMs runs from the event's commit (the body's timestamp), so a delivery held back ends on the same schedule
    const ageMs = () => Date.now() - loaded.event.created_at.getTime();
    const go = await untilPostgresAnswers(() => turn(input, delivery, loaded.receiver));
    if ('heldBy' in go) throw deferral(input, go.heldBy, ageMs());

    const attempt = Math.max(loaded.tries.last, sentBefore) + 1;
    sending(attempt);
    const answer = await send(input, loaded, attempt);
    // the request was sent: its row waits for PostgreSQL here, or the failed try would send it again
    const recorded = await unlessDeleted(input, () =>
      untilPostgresAnswers(() =>
        recordDelivery(deps.db, { ...input, eventType: loaded.event.type, attempt, statusCode: answer.statusCode, success: answer.error === null, error: answer.error, durationMs: answer.durationMs, probe: go.probe }),
      ),
    );
    if (!recorded) return SKIPPED;
    deliveries.inc({ result: answer.error === null ? 'success' : 'failure' });
    const answered = answer.error === null || answer.final;
    // the receiver row references the webhook: deleted between the try's row and this one, a skip too
    const breaker = await unlessDeleted(input, () =>
      untilPostgresAnswers(() =>
        answered
          ? recordReceiverAnswered(deps.db, input.webhookId).then(() => undefined)
          : recordReceiverFailure(deps.db, input.webhookId, delivery, { openAfterFailures: policy.openAfterFailures, initialMs: policy.backoffInitialMs, maxMs: policy.backoffMaxMs }),
      ),
    );
    if (!breaker) return SKIPPED;
    const receiver = breaker.value;
    if (answer.error === null) return { attempt, statusCode: answer.statusCode as number };
    const message = `delivery to webhook ${input.webhookId}: ${answer.error}`;
    if (answer.final) throw ApplicationFailure.create({ type: 'WEBHOOK_REJECTED', message, nonRetryable: true });
    // an open breaker's probe tries the receiver for all the webhook's deliveries: not counted against this one's tries
    const counted = loaded.tries.counted + (go.probe ? 0 : 1);
    if (counted >= policy.maxTries || ageMs() >= policy.retryForMs) throw ApplicationFailure.create({ type: WEBHOOK_GAVE_UP, message, nonRetryable: true });
    return retryLater(message, attempt, receiver, ageMs());
  }

  /**
   * The try of a webhook whose URL is on a bad port (lib/http/badPorts.ts): no request, one row in the log saying why
   * and what to do, and a final failure (the workflow gives up). The breaker is left alone: no receiver was tried.
   */
  async function refuseBadPort(input: DeliveryInput, loaded: Loaded, attempt: number, port: number): Promise<DeliverResult> {
    const error = `not sent: ${badPortReason(port)}: serve the receiver on another port and register the webhook with that URL`;
    const recorded = await unlessDeleted(input, () =>
      untilPostgresAnswers(() => recordDelivery(deps.db, { ...input, eventType: loaded.event.type, attempt, statusCode: null, success: false, error, durationMs: 0, probe: false })),
    );
    if (!recorded) return SKIPPED;
    throw ApplicationFailure.create({ type: 'WEBHOOK_REJECTED', message: `delivery to webhook ${input.webhookId}: ${error}`, nonRetryable: true });
  }

  /**
   * `write`'s result, or undefined when it failed on a foreign key because the webhook was deleted while the try ran
   * (its log and receiver rows went with it): the delivery is then a skip, as when deleted before the try.
   */
  async function unlessDeleted<T>(input: DeliveryInput, write: () => Promise<T>): Promise<{ value: T } | undefined> {
    try {
      return { value: await write() };
    } catch (err) {
      if ((err as { code?: unknown }).code === FOREIGN_KEY_VIOLATION && !(await getWebhook(deps.db, input.webhookId))) return undefined;
      throw err;
    }
  }

  async function load(input: DeliveryInput): Promise<Loaded | undefined> {
    const webhook = await getWebhook(deps.db, input.webhookId);
    if (!webhook?.active) return undefined;
    const { rows } = await deps.db.query<Loaded['event']>('SELECT type, data, created_at FROM events WHERE seq = $1', [input.eventSeq]);
    const event = rows[0];
    if (!event) return undefined;
    const [tries, receiver] = await Promise.all([deliveryTries(deps.db, input.webhookId, input.eventSeq), getReceiver(deps.db, input.webhookId)]);
    return { webhook, event, tries, receiver };
  }

  /**
   * Whether this try may send: when the breaker is closed, or as the probe when this delivery took it; else held
   * back by the receiver's state as it is now (the breaker is open and the probe is not due or someone else has it).
   */
  async function turn(input: DeliveryInput, delivery: string, receiver: ReceiverRow | undefined): Promise<{ probe: boolean } | { heldBy: ReceiverRow }> {
    if (!receiver || receiver.consecutive_failures < policy.openAfterFailures) return { probe: false };
    const leaseMs = policy.timeoutMs + RECORD_RESERVE_MS;
    if (await claimProbe(deps.db, input.webhookId, delivery, { openAfterFailures: policy.openAfterFailures, leaseMs })) return { probe: true };
    const now = await getReceiver(deps.db, input.webhookId);
    // closed meanwhile (the probe was answered): send
    return now && now.consecutive_failures >= policy.openAfterFailures ? { heldBy: now } : { probe: false };
  }

  /**
   * The try this breaker holds back: no request, no row, not a try. It is retried just after the next probe is due
   * (or, while a probe is under way, after at most one probe pause); past webhooks.retryForMs the delivery gives up.
   */
  function deferral(input: DeliveryInput, receiver: ReceiverRow, ageMs: number): ApplicationFailure {
    const since = receiver.failing_since?.toISOString() ?? 'now';
    const leftMs = policy.retryForMs - ageMs;
    if (leftMs <= 0) {
      return ApplicationFailure.create({
        type: WEBHOOK_GAVE_UP,
        message: `delivery to webhook ${input.webhookId}: not sent within webhooks.retryForMs (${policy.retryForMs} ms): the receiver has been failing since ${since}`,
        nonRetryable: true,
      });
    }
    deferrals.inc();
    const waitMs = receiver.probe_in_ms > 0 ? receiver.probe_in_ms : Math.max(policy.backoffInitialMs, Math.min(receiver.lease_left_ms, receiver.probe_interval_ms));
    const retryInMs = Math.max(1, Math.min(withJitter(waitMs), leftMs));
    return ApplicationFailure.create({
      type: 'WEBHOOK_DEFERRED',
      message: `delivery to webhook ${input.webhookId}: held back, the receiver has been failing since ${since} (${receiver.consecutive_failures} failed tries in a row)`,
      nextRetryDelay: retryInMs,
      details: [{ retryInMs } satisfies RetryDetails],
      // an expected outcome, not an error: the SDK logs it at debug, not as a warning per held delivery per probe
      // pause (1,600 held deliveries made 1,600 warnings a pause), and Temporal does not count it as a failure
      category: ApplicationFailureCategory.BENIGN,
    });
  }

  /**
   * A failed try to retry: after its own pause (from its real try count), and not before the next probe when the
   * breaker is open; a pause that would end past webhooks.retryForMs ends there instead, for a last try.
   */
  function retryLater(message: string, attempt: number, receiver: ReceiverRow | undefined, ageMs: number): never {
    const probeInMs = receiver && receiver.consecutive_failures >= policy.openAfterFailures ? receiver.probe_in_ms : 0;
    const retryInMs = Math.max(1, Math.min(withJitter(Math.max(backoffMs(policy, attempt), probeInMs)), policy.retryForMs - ageMs));
    throw ApplicationFailure.create({ type: 'WEBHOOK_FAILED', message, nextRetryDelay: retryInMs, details: [{ retryInMs } satisfies RetryDetails] });
  }

  /** The signed POST, its status read and its body never (a receiver streaming gigabytes would fill the worker). */
  async function send(input: DeliveryInput, { webhook, event }: Loaded, attempt: number): Promise<Answer> {
    const { body, signature } = signedBody(openSecret(encryptionKey(), webhook.secret), {
      event: event.type,
      timestamp: event.created_at.toISOString(),
      data: event.data,
    });
    const started = Date.now();
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
        signal: AbortSignal.timeout(policy.timeoutMs),
      });
      await res.body?.cancel().catch(() => undefined);
      return { statusCode: res.status, ...answerError(res), durationMs: Date.now() - started };
    } catch (err) {
      // the reason, not undici's "fetch failed" (lib/http/fetchFailure.ts)
      const why = fetchFailureReason(err);
      // a bad port the list above missed (a Node whose fetch blocks more ports): asking again cannot help either
      return { statusCode: null, error: why === 'timed out' ? 'timed out' : `request failed: ${why}`, final: isBadPortFailure(err), durationMs: Date.now() - started };
    }
  }
}
