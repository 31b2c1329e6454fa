/**
 * A service that is down, as the board tells it: the task service answers 503 while PostgreSQL or Temporal is
 * unavailable (and for a proxied service it cannot reach), a proxied service answers its own 503, and a server that
 * does not answer at all is a network error (status 0). A screen whose data failed that way reads it again every
 * UNAVAILABLE_RETRY_MS by itself (main.tsx, refetchInterval), so it loads once the service is back, with no click and
 * no stream needed (the Scheduler, Agents and Traces screens have none), and its error says so (ErrorMessage).
 */
import { useRef } from 'react';
import { ApiError, type Service } from './client';

/** How often a screen's read that failed because a service was down is sent again. */
export const UNAVAILABLE_RETRY_MS = 5_000;

/** The service named in the board's words. */
export const SERVICE_NAMES: Record<Service, string> = {
  task: 'The task service',
  scheduler: 'The scheduler service',
  agents: 'The multi-agent service',
  traces: 'The message trace service',
};

/** Whether `err` says a service is down for now (not that the request was wrong): 502, 503, 504, or no answer. */
export function isUnavailable(err: unknown): err is ApiError {
  return err instanceof ApiError && (err.status === 0 || err.status === 502 || err.status === 503 || err.status === 504);
}

/** The refetchInterval of every query: again in a while when the last read found its service down, else never. */
export function retryWhileUnavailable(query: { state: { status: string; error: unknown } }): number | false {
  return query.state.status === 'error' && isUnavailable(query.state.error) ? UNAVAILABLE_RETRY_MS : false;
}

/**
 * What an unavailable error adds to its message: which service, and what happens next. A screen's read (`retried`) is
 * sent again by itself; an action the user took (a save, a delete) is not: it says to send it again.
 */
export function unavailableNote(err: ApiError, retried = true): string {
  const next = retried ? `This screen tries again every ${UNAVAILABLE_RETRY_MS / 1000} seconds by itself.` : 'Nothing is sent again by itself: try again once it is back.';
  if (err.status === 0) return `The Armada server did not answer. ${next}`;
  return `${SERVICE_NAMES[err.service]} is unavailable (HTTP ${err.status}). ${next}`;
}

/**
 * A read's result as a screen shows it while the read is tried again: TanStack Query clears the error of a query that
 * has no data at each new try (its status back to pending), so an outage's error, and the "Not loaded" it left in the
 * lists, blinked away for each 5 s try ("Loading…" in their place) and came back when it failed again. The last error
 * stays until a try succeeds, or the query stops trying.
 */
export function useErrorKept<R extends { error: unknown; isPending: boolean; isFetching: boolean }>(result: R): R {
  const kept = useRef<unknown>(null);
  if (result.error) kept.current = result.error;
  else if (!(result.isPending && result.isFetching)) kept.current = null;
  return kept.current && !result.error ? { ...result, error: kept.current, isPending: false, isError: true, status: 'error' } : result;
}
