/**
 * The agent runs in progress in this worker process, by process id. A worker paused past the heartbeat timeout (a
 * SIGSTOP, a VM freeze, a long GC) has its try timed out by Temporal, and the retry may come to this same process
 * while the earlier try is still finishing here: the retry then waits for it and takes what it recorded, instead of
 * stopping a run that went on (or had already finished) and starting the agent again.
 */
import type { Pool } from 'pg';

/** What a try of a run ends with: the result it recorded in the process row, or undefined when it recorded none. */
export interface TryOutcome<R> {
  /** the activity attempt of the try */
  attempt: number;
  settled: Promise<R | undefined>;
}

export interface RunsInProgress<R> {
  /** The try of this run still in progress in this process, if any. */
  current(processId: string): TryOutcome<R> | undefined;
  /** Registers a try; `settle` (once) ends it with what it recorded, and forgets it. */
  begin(processId: string, attempt: number): { recorded(result: R): void; settle(): void };
}

const registries = new WeakMap<Pool, RunsInProgress<unknown>>();

/** The registry of this pool's worker (one per pool, like the process watch). */
export function runsInProgress<R>(db: Pool): RunsInProgress<R> {
  let r = registries.get(db);
  if (!r) {
    r = createRunsInProgress<unknown>();
    registries.set(db, r);
  }
  return r as RunsInProgress<R>;
}

export function createRunsInProgress<R>(): RunsInProgress<R> {
  const runs = new Map<string, TryOutcome<R>>();
  return {
    current: (processId) => runs.get(processId),
    begin(processId, attempt) {
      let result: R | undefined;
      let resolve: (r: R | undefined) => void = () => undefined;
      const entry: TryOutcome<R> = { attempt, settled: new Promise((res) => (resolve = res)) };
      runs.set(processId, entry);
      return {
        recorded(r) {
          result = r;
        },
        settle() {
          if (runs.get(processId) === entry) runs.delete(processId);
          resolve(result);
        },
      };
    },
  };
}
