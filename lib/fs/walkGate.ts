/**
 * The cap on filesystem walks (repository discovery, recursive listing) of one task service: `concurrency` run at
 * once, `queue` more wait their turn for at most the walk time budget, and any further one is refused at once with
 * 503 BUSY. Without it a burst of deep walks each spawning git turns into thousands of child processes and stalls
 * every service of the process (docs/filesystem.md#bounds).
 */
import { AppError } from '../errors';
import { createSlots } from '../process/slots';

export interface WalkGate {
  /** Runs `fn` when a turn is free; throws 503 BUSY when the queue is full or the wait outlasts `maxWaitMs`. */
  run<T>(fn: () => Promise<T>): Promise<T>;
  running(): number;
  waiting(): number;
}

/** Seconds a refused caller is told to wait (Retry-After). */
export const BUSY_RETRY_AFTER_S = 1;

export const busy = (message: string): AppError =>
  new AppError(503, 'BUSY', message, { retryAfterSeconds: BUSY_RETRY_AFTER_S });

export function createWalkGate(opts: { concurrency: number; queue: number; maxWaitMs: number }): WalkGate {
  const slots = createSlots(opts.concurrency);
  let waiting = 0;
  return {
    running: () => slots.inUse(),
    waiting: () => waiting,
    async run(fn) {
      let release: () => void;
      if (slots.inUse() < opts.concurrency) {
        release = await slots.acquire(); // free turn: granted at once
      } else {
        if (waiting >= opts.queue) throw busy(`Too many filesystem walks at once (${opts.concurrency} running, ${waiting} waiting); retry shortly`);
        waiting++;
        try {
          release = await slots.acquire(AbortSignal.timeout(opts.maxWaitMs));
        } catch {
          throw busy(`No filesystem walk turn within ${opts.maxWaitMs} ms; retry shortly`);
        } finally {
          waiting--;
        }
      }
      try {
        return await fn();
      } finally {
        release();
      }
    },
  };
}
