/**
 * A counting semaphore for one process: `armada worker --max-agents N` caps the agent processes a worker runs at
 * once, whatever its activity slots allow. Waiters are served first come, first served.
 */
export interface Slots {
  readonly max: number;
  inUse(): number;
  /** Resolves with a release function once a slot is free; rejects when `signal` aborts while waiting. */
  acquire(signal?: AbortSignal): Promise<() => void>;
}

export function createSlots(max: number): Slots {
  let used = 0;
  const waiters: (() => void)[] = [];
  const release = () => {
    used--;
    waiters.shift()?.();
  };
  const once = () => {
    let done = false;
    return () => {
      if (!done) {
        done = true;
        release();
      }
    };
  };
  return {
    max,
    inUse: () => used,
    acquire(signal) {
      if (used < max) {
        used++;
        return Promise.resolve(once());
      }
      return new Promise((resolve, reject) => {
        const grant = () => {
          signal?.removeEventListener('abort', onAbort);
          used++;
          resolve(once());
        };
        const onAbort = () => {
          const i = waiters.indexOf(grant);
          if (i >= 0) waiters.splice(i, 1);
          reject(new Error('aborted while waiting for an agent slot'));
        };
        if (signal?.aborted) return onAbort();
        signal?.addEventListener('abort', onAbort, { once: true });
        waiters.push(grant);
      });
    },
  };
}
