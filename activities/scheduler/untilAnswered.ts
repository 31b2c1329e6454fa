/** Inside a scheduler activity: a PostgreSQL step run until PostgreSQL answers, so an outage delays a run instead of failing it. */
import { CancelledFailure } from '@temporalio/common';
import { isPostgresReadOnly, isPostgresShortOfResources } from '../../lib/db/pool';
import type { Logger } from '../../lib/logger';

/**
 * Runs `fn` until it answers (500 ms doubling to 30 s between tries, as the projection's local activities retry); an
 * abort of `signal` (a stop) ends the wait with a CancelledFailure. A frozen PostgreSQL simply keeps the step waiting.
 */
export async function untilAnswered<T>(logger: Logger, what: string, signal: AbortSignal, fn: () => Promise<T>): Promise<T> {
  for (let pause = 500; ; pause = Math.min(pause * 2, 30_000)) {
    try {
      return await fn();
    } catch (err) {
      if (signal.aborted) throw new CancelledFailure('execution stopped');
      logger.warn({ err: { message: (err as Error).message }, what }, `scheduler run: ${refusal(err)}; trying again`);
      await pauseFor(pause, signal);
      if (signal.aborted) throw new CancelledFailure('execution stopped');
    }
  }
}

/** What the failed step met, in the warning: a server that answered (read-only, short of a resource) is not silent. */
function refusal(err: unknown): string {
  if (isPostgresReadOnly(err)) return 'PostgreSQL takes no writes now (read-only)';
  if (isPostgresShortOfResources(err)) return 'PostgreSQL is short of a resource';
  return 'PostgreSQL did not answer';
}

/** Waits `ms`, or less when `signal` aborts. */
export function pauseFor(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise<void>((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done);
  });
}
