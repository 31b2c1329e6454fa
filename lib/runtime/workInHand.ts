/**
 * Work an activity returned without finishing, which this process still owes (a scheduled run's start that handed
 * over after its local try: the platform's answer to a request in flight is recorded when it comes). Usually a later
 * activity of the same worker awaits it and the worker's own shutdown waits for that activity; when none does (the
 * follow-up activity went to another worker, or none was dispatched because this worker was already shutting down),
 * the worker's stop waits for the work itself, within the same grace time, so the process does not exit between a
 * request and the record of its answer (the next try would then report the answer unknown).
 */
export interface WorkInHand {
  track(work: Promise<unknown>): void;
  /** Resolves true once everything tracked has ended, or false after `limitMs` with work still going. */
  settle(limitMs: number): Promise<boolean>;
}

export function createWorkInHand(): WorkInHand {
  const inFlight = new Set<Promise<unknown>>();
  return {
    track(work) {
      const p = work.then(
        () => undefined,
        () => undefined,
      );
      inFlight.add(p);
      void p.finally(() => inFlight.delete(p));
    },
    async settle(limitMs) {
      const deadline = Date.now() + limitMs;
      while (inFlight.size) {
        const left = deadline - Date.now();
        if (left <= 0) return false;
        let timer: NodeJS.Timeout | undefined;
        await Promise.race([Promise.allSettled([...inFlight]), new Promise((r) => (timer = setTimeout(r, left)))]);
        clearTimeout(timer);
      }
      return true;
    },
  };
}
