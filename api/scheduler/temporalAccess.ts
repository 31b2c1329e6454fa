/**
 * The scheduler routes' access to Temporal: the client, and a deadline on every call, so a Temporal that takes the
 * connection but does not answer (frozen, stalled) is a 503 `{detail}` naming the operation (with Retry-After) within
 * the deadline, not a request left hanging for as long as it stays silent (docs/scheduler.md#temporal-deadlines).
 */
import type { Client } from '@temporalio/client';
import { AppError } from '../../lib/errors';
import { isTemporalUnreachable, TEMPORAL_OVERLOAD_RETRY_AFTER_SECONDS, temporalRefusal, type TemporalRefusal } from '../../lib/temporal/client';
import type { DetailServiceDeps } from '../detailServiceDeps';

/** How long one operation of a route (a start, a cancel, a schedule change) may wait for Temporal. */
export const TEMPORAL_CALL_TIMEOUT_MS = 10_000;
/**
 * How long a change of a schedule waits for the one in progress (which holds the schedule's change lock across its
 * Temporal calls) before its 409 "another change … is in progress": a Temporal that answers lets a queue of changes
 * through well within it, one that is slow is said so at once instead of each waiter's database lock_timeout (a 503
 * worded as a stuck transaction). Not the API's lock timeout: it bounds a wait for Temporal, not for a transaction.
 */
export const SCHEDULE_CHANGE_WAIT_MS = 5_000;
/** How long a read for a view (a schedule's next run) may wait; the view then shows what it shows without Temporal. */
export const TEMPORAL_READ_TIMEOUT_MS = 5_000;

/**
 * The 503 of an operation Temporal did not answer (or could not be reached for), or answered with a refusal of its own
 * (`refusal`: a rate or resource limit, a failure inside the server; lib/temporal/client.ts temporalRefusal): what it
 * asked for may still happen (a failure inside may have done part of it), so the callers resynchronise the same way.
 */
export class TemporalUnavailable extends AppError {
  constructor(what: string, refusal?: TemporalRefusal) {
    if (refusal === 'overloaded')
      super(503, 'SERVICE_UNAVAILABLE', `${what}: Temporal is overloaded (it refused the call for a rate or resource limit); try again in a few seconds`, {
        retryAfterSeconds: TEMPORAL_OVERLOAD_RETRY_AFTER_SECONDS,
      });
    else if (refusal === 'failed') super(503, 'SERVICE_UNAVAILABLE', `${what}: Temporal failed the call on its side; try again (Temporal's own log says why)`);
    else super(503, 'SERVICE_UNAVAILABLE', `${what}: Temporal is unavailable`);
  }
}

export const temporalUnavailable = (what: string): TemporalUnavailable => new TemporalUnavailable(what);

/** The client, or a 503 with a clear detail when Temporal cannot be reached. */
export async function temporalClient(deps: DetailServiceDeps, what: string): Promise<Client> {
  try {
    return await deps.temporal.client();
  } catch {
    throw temporalUnavailable(what);
  }
}

/**
 * Runs `fn`'s Temporal calls under one deadline (`ms` from now). A call that gets no answer by then, or cannot reach
 * Temporal, is the 503 `<what>: Temporal is unavailable`; Temporal's other answers (a refusal, not found) pass as they are.
 */
export async function withinDeadline<T>(client: Client, what: string, fn: () => Promise<T>, ms = TEMPORAL_CALL_TIMEOUT_MS): Promise<T> {
  try {
    return await client.connection.withDeadline(Date.now() + ms, fn);
  } catch (err) {
    if (isTemporalUnreachable(err)) throw temporalUnavailable(what);
    const refusal = temporalRefusal(err);
    if (refusal) throw new TemporalUnavailable(what, refusal);
    throw err;
  }
}
