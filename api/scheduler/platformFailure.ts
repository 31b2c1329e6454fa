/**
 * A flow platform's failure during a request (down, an error answer, an answer Armada cannot read, a redirect to
 * another origin) is the upstream's, not the client's: a 502, or a 504 when it did not answer within
 * `scheduler.sourceTimeoutMs`. What the client got wrong (an unknown source or flow, a bad body) stays a 4xx.
 */
import { AppError } from '../../lib/errors';
import { PlatformTimeout, type PlatformError } from '../../lib/scheduler/platforms';

/** The answer to `err`: `<opening>: <the failure>` (the call and what went wrong), 504 for a timeout, else 502. */
export function platformFailure(err: PlatformError, opening: string): AppError {
  const detail = `${opening}: ${err.message}`;
  return err instanceof PlatformTimeout ? new AppError(504, 'GATEWAY_TIMEOUT', detail) : new AppError(502, 'BAD_GATEWAY', detail);
}
