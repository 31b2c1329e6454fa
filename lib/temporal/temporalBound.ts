/**
 * The bound of the Temporal calls a request makes while it holds a PostgreSQL transaction open (a workflow started
 * before its row commits, the approval cancels of a delete that holds the rows it deletes): together at most
 * `config.temporalInTransactionMs` (ARMADA_API_TEMPORAL_IN_TRANSACTION_TIMEOUT_MS, default 10 s), well under the API's
 * `idle_in_transaction_session_timeout` (30 s). A Temporal that does not answer in that time (stalled, partitioned, an
 * answer lost) is the 503 "try again" of an unreachable Temporal, and the caller's transaction rolls back; before, the
 * call waited without a limit and PostgreSQL ended the session under the request after 30 s, with the rows locked
 * until then (docs/configuration.md#the-apis-database-limits).
 *
 * A start the deadline cut short may still have reached Temporal (its answer was what was lost): the workflows
 * started this way wait for their inserting transaction's end and do nothing when the row did not commit, so the 503
 * is the truth and the request may be sent again (docs/approvals.md, "Create").
 *
 * The same bound serves the Temporal calls a request makes outside a transaction that would otherwise wait without
 * a limit (an attempt's cancel, a delete's removals, a follow-up queue's "is the attempt running", a follow-up's
 * signal), with the caller's own limit (attempts.startTimeoutMs there: api/task/attemptService.ts, temporalCallMs).
 */
import type { Client } from '@temporalio/client';
import type { AppError } from '../errors';
import { isTemporalDeadlineExceeded, isTemporalUnreachable, temporalUnavailable } from './client';

/**
 * Runs `fn`'s Temporal calls under one deadline `boundMs` from now; past it, or when Temporal is not reached, the 503
 * (`unavailable` makes it, from what happened, when the call's outcome is not simply "nothing was done": a signal).
 * In a transaction `boundMs` is config.temporalInTransactionMs; outside one, the caller's own limit.
 */
export async function withinTemporalBound<T>(client: Client, boundMs: number, fn: () => Promise<T>, unavailable: (detail: string) => AppError = temporalUnavailable): Promise<T> {
  const deadline = Date.now() + boundMs;
  try {
    return await client.connection.withDeadline(deadline, fn);
  } catch (err) {
    if (!isTemporalUnreachable(err)) throw err;
    // gRPC may end the call on its deadline a few ms before this clock reaches it (its timer is set from the time left)
    const timedOut = Date.now() >= deadline || isTemporalDeadlineExceeded(err);
    throw unavailable(timedOut ? `it did not answer within ${Math.round(boundMs / 100) / 10} s` : (err as Error).message);
  }
}
