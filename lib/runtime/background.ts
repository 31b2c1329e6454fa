/**
 * Work a request starts but does not wait for (an attempt start's confirmation): tracked so that closing the
 * service waits for it, and its failure logged. Only for work that something else finishes when it fails or is cut
 * short (the start reconciler confirms a start left pending), never for the only copy of a write.
 */
import type { Logger } from '../logger';

export interface BackgroundWork {
  /**
   * Runs `fn` without the caller waiting, once the current I/O callbacks are done (so an answer the request is about
   * to write leaves first, before fn's first query is even sent); a failure is logged as `what` failed.
   */
  run(what: string, fn: () => Promise<unknown>): void;
  /** Resolves when everything started so far has ended. */
  settle(): Promise<void>;
}

export function createBackgroundWork(logger: Logger): BackgroundWork {
  const inFlight = new Set<Promise<unknown>>();
  return {
    run(what, fn) {
      const p = new Promise<void>((resolve) => setImmediate(resolve))
        .then(fn)
        .catch((err) => logger.warn({ err: { message: (err as Error)?.message } }, `${what} failed; it is finished later`))
        .finally(() => inFlight.delete(p));
      inFlight.add(p);
    },
    async settle() {
      while (inFlight.size) await Promise.allSettled([...inFlight]);
    },
  };
}
