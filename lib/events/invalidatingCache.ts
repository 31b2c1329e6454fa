/**
 * A read cache that is dropped whenever PostgreSQL says the data changed (a trigger's NOTIFY on one of `channels`), and that
 * never answers with data older than a write its caller could have seen committed:
 *
 * - every read first waits for a barrier on the LISTEN connection (lib/events/listener.ts), so every notification of
 *   every transaction committed before the request arrived has been applied, whichever process or replica wrote it;
 * - a miss loads from the database and is kept only if no notification arrived while it loaded; reads of a page that
 *   is already loading since the last notification share that load (no stampede after each change);
 * - while the LISTEN connection is down (or does not answer) nothing is served from or kept in the cache.
 *
 * Values are kept per key, least recently used first out beyond `maxEntries`.
 */
import type { EventListener } from './listener';

export type CacheOutcome = 'hit' | 'miss' | 'bypass';

export interface InvalidatingCache<V> {
  read(key: string, load: () => Promise<V>): Promise<{ value: V; outcome: CacheOutcome }>;
  /** Entries held now (for tests and metrics). */
  size(): number;
}

export function createInvalidatingCache<V>(opts: {
  listener: EventListener;
  channels: string[];
  maxEntries: number;
  /** Whether a loaded value may be kept (default: every value), e.g. not a "not found". */
  keep?: (value: V) => boolean;
  onOutcome?: (outcome: CacheOutcome) => void;
}): InvalidatingCache<V> {
  const { listener, channels, maxEntries } = opts;
  const hears = () => channels.every((c) => listener.hears(c));
  const entries = new Map<string, V>(); // insertion order = recency order
  let generation = 0;
  const inFlight = new Map<string, { generation: number; value: Promise<V> }>();
  const drop = () => {
    generation++;
    entries.clear();
  };
  for (const channel of channels) listener.watch(channel, drop);
  const done = (value: V, outcome: CacheOutcome) => {
    opts.onOutcome?.(outcome);
    return { value, outcome };
  };

  return {
    async read(key, loader) {
      // after the barrier every change committed before this call has dropped what it made stale
      if (!(await listener.barrier()) || !hears()) return done(await loader(), 'bypass');
      const cached = entries.get(key);
      if (cached !== undefined) {
        entries.delete(key);
        entries.set(key, cached);
        return done(cached, 'hit');
      }
      // the same page already loading since the last change: its snapshot is at least as new as this call needs
      const loading = inFlight.get(key);
      if (loading && loading.generation === generation) {
        const shared = await loading.value.catch(() => undefined);
        if (shared !== undefined) return done(shared, 'hit');
      }
      const before = generation;
      const pending = loader();
      inFlight.set(key, { generation: before, value: pending });
      let value: V;
      try {
        value = await pending;
      } finally {
        if (inFlight.get(key)?.value === pending) inFlight.delete(key);
      }
      // a notification during the load may be for a commit the load did not see: then the value is not kept
      if (before === generation && hears() && (opts.keep?.(value) ?? true)) {
        entries.set(key, value);
        if (entries.size > maxEntries) entries.delete(entries.keys().next().value as string);
      }
      return done(value, 'miss');
    },
    size: () => entries.size,
  };
}
