/**
 * The definitions scheduled runs start from (docs/scheduler.md#definition-cache): the workflow's row and its first
 * task's source, as beginRun needs them before the first request can leave.
 *
 * - **Cache.** Kept in the worker (lib/events/invalidatingCache.ts) and dropped on every NOTIFY of migration 085's
 *   triggers (any committed change to a workflow, its default schedule or a source's address, key, type, name or
 *   status). Every read first completes a barrier round trip on the worker's LISTEN connection, so the NOTIFY of every
 *   change committed before the read started has dropped the cache; while that connection is down every read goes to
 *   PostgreSQL.
 * - **Prefetch.** The run's first workflow task calls the `scheduler.prefetchDefinition` sink (no command, not called
 *   on replay): the worker starts that read right after the activation, and the run's start takes it: the local try
 *   beginRunLocal, which the SDK's core dispatches after that activation, or (runs before local-start) beginRun's first
 *   attempt, which Temporal hands out once it has completed the workflow task. The read starts after the run was fired (the activation
 *   comes from the workflow task Temporal scheduled when it started the run), so it sees every change committed
 *   before the run was fired, as a read inside beginRun would. An unused prefetch is dropped after PREFETCH_TTL_MS.
 */
import type { Pool } from 'pg';
import { SCHEDULER_DEFINITIONS_CHANNEL, getWorkflowForRun, type RunDefinition } from '../../lib/db/schedulerWorkflows';
import { createInvalidatingCache } from '../../lib/events/invalidatingCache';
import type { EventListener } from '../../lib/events/listener';
import type { Logger } from '../../lib/logger';
import type { Metrics } from '../../lib/metrics';
import { schedulerMetrics } from '../../lib/scheduler/metrics';

/** Workflows whose definition the worker keeps (least recently started first out). */
const CACHE_ENTRIES = 1000;
/** A prefetch beginRun did not take by then (it ran on another worker, or never) is dropped. */
export const PREFETCH_TTL_MS = 60_000;
const MAX_PREFETCHES = 10_000;

export interface RunDefinitions {
  /** Reads the workflow's definition now: from the cache when it is current, else from PostgreSQL. */
  read(workflow: string): Promise<RunDefinition | undefined>;
  /** Starts the read for the run `runKey` (`<workflow id>/<run id>`); beginRun takes it. Never throws. */
  prefetch(workflow: string, runKey: string): void;
  /** The prefetched read of the run, once (undefined when there is none). */
  take(runKey: string): Promise<RunDefinition | undefined> | undefined;
}

export function createRunDefinitions(deps: { db: Pool; events?: EventListener; metrics: Metrics; logger: Logger }): RunDefinitions {
  const metrics = schedulerMetrics(deps.metrics);
  const cache = deps.events
    ? createInvalidatingCache<RunDefinition | undefined>({
        listener: deps.events,
        channels: [SCHEDULER_DEFINITIONS_CHANNEL],
        maxEntries: CACHE_ENTRIES,
        keep: (def) => def !== undefined, // a missing workflow is read again every time
        onOutcome: (outcome) => metrics.definitionCache.inc({ outcome }),
      })
    : undefined;
  const read = async (workflow: string): Promise<RunDefinition | undefined> =>
    cache ? (await cache.read(workflow, () => getWorkflowForRun(deps.db, workflow))).value : getWorkflowForRun(deps.db, workflow);
  const prefetched = new Map<string, { at: number; value: Promise<RunDefinition | undefined> }>(); // insertion order = age

  return {
    read,
    prefetch(workflow, runKey) {
      const now = Date.now();
      for (const [key, p] of prefetched) {
        if (now - p.at < PREFETCH_TTL_MS && prefetched.size < MAX_PREFETCHES) break;
        prefetched.delete(key);
      }
      const value = read(workflow);
      value.catch((err) => deps.logger.debug({ err: { message: (err as Error).message }, workflow }, 'definition prefetch failed; beginRun reads again'));
      prefetched.set(runKey, { at: now, value });
    },
    take(runKey) {
      const p = prefetched.get(runKey);
      if (!p) return undefined;
      prefetched.delete(runKey);
      return Date.now() - p.at < PREFETCH_TTL_MS ? p.value : undefined;
    },
  };
}
