/**
 * One LISTEN connection per process fans events out to in-process subscribers (WebSocket and SSE streams).
 * It reconnects after a PostgreSQL restart and catches up from the events table by seq, so no event committed while
 * the connection was down is missed. What it has delivered is a cursor (lib/events/eventCursor.ts), not a
 * high-water mark: a seq that commits after a higher one is delivered when it commits, and the holes below delivered
 * seqs are settled once their transactions have ended (lib/events/eventGaps.ts). Streams build their resume tokens
 * on it (lib/events/eventFollow.ts).
 *
 * The same connection carries other channels (`watch`) and a read barrier (`barrier`) for caches that are dropped on
 * a NOTIFY: see lib/events/invalidatingCache.ts.
 */
import { Client } from 'pg';
import type { Pool } from 'pg';
import type { Logger } from '../logger';
import { EventCursor, formatUnion } from './eventCursor';
import { createGapProver, startingCursor, type GapProver } from './eventGaps';
import { EVENTS_CHANNEL, readEventsOutside, type StoredEvent } from './publish';

export type EventHandler = (event: StoredEvent) => void;
/** A notification's payload, or null when the connection was lost or re-established (notifications may be missed). */
export type ChannelHandler = (payload: string | null) => void;

/** How the LISTEN connection shows in pg_stat_activity. */
export const LISTENER_APPLICATION_NAME = 'armada-listener';
const CHANNEL = /^[a-z_][a-z0-9_]{0,62}$/;
const BARRIER_TIMEOUT_MS = 2000;
/** As the pool's connect timeout (lib/db/pool.ts). */
const CONNECT_TIMEOUT_MS = 10_000;
const CATCH_UP_PAGE = 10_000;

export interface EventListener {
  /** Calls `handler` for every event with one of `topics` (every event when topics is empty). Returns unsubscribe. */
  subscribe(topics: string[], handler: EventHandler): () => void;
  /**
   * False until the listener has its starting cursor, which it takes on its first connection to PostgreSQL (a process
   * may start while PostgreSQL is away): until then `subscribe` hears nothing and a stream cannot start.
   */
  started(): boolean;
  /** The highest seq delivered to subscribers (a lower one may still come: see cursor()). */
  lastSeq(): number;
  /** A copy of what has been delivered to subscribers (or was stored before, or never commits): lib/events/eventCursor.ts. */
  cursor(): EventCursor;
  /** The resume token of a subscriber that has had everything delivered so far, and `own` besides. */
  token(own?: EventCursor): string;
  /** LISTENs on another channel (now and after every reconnect). Returns unwatch. */
  watch(channel: string, handler: ChannelHandler): () => void;
  /**
   * Resolves true once every notification of every transaction that committed before this call has been handed to
   * the watchers (a round trip on the LISTEN connection: PostgreSQL sends pending notifications before it answers).
   * Concurrent calls share round trips. False when the connection is down or does not answer within 2 s.
   */
  barrier(): Promise<boolean>;
  /** True while the current connection LISTENs on `channel` (false while it is down or reconnecting). */
  hears(channel: string): boolean;
  close(): Promise<void>;
}

/**
 * `events: false`: a listener for `watch` channels and `barrier` only (a worker's caches), which does not LISTEN on
 * the events channel, so the process neither receives nor catches up on domain events; `subscribe` then hears nothing.
 */
export async function createEventListener(connectionString: string, db: Pool, logger: Logger, opts: { events?: boolean; applicationName?: string } = {}): Promise<EventListener> {
  const log = logger.child({ component: 'events' });
  const withEvents = opts.events ?? true;
  const subscribers = new Set<{ topics: Set<string>; handler: EventHandler }>();
  let client: Client | undefined;
  let closed = false;
  let retryTimer: NodeJS.Timeout | undefined;
  let delivering = Promise.resolve();
  const watchers = new Map<string, Set<ChannelHandler>>();
  let heard = new Set<string>(); // channels LISTENed on the current connection
  const tellWatchers = (channel: string, payload: string | null) => {
    for (const h of watchers.get(channel) ?? []) {
      try {
        h(payload);
      } catch (err) {
        log.warn({ err }, 'channel watcher threw');
      }
    }
  };
  const tellAllWatchers = () => {
    for (const channel of watchers.keys()) tellWatchers(channel, null);
  };

  // Every seq delivered to the subscribers, stored before this listener started, or proven never to commit. Seqs of
  // concurrent transactions commit out of order (7 before 6), so this is a watermark plus the seqs above it, not a
  // high-water mark: 6 is delivered when it commits, however late, and a resume token taken from it misses nothing.
  // Taken on the first connection, before its LISTEN: a process that starts while PostgreSQL is away starts all the
  // same (its requests answer 503 meanwhile) and takes it once PostgreSQL answers (before, the start failed and the
  // process exited). Until then nothing is delivered and `started()` is false.
  let accounted: EventCursor | undefined = withEvents ? undefined : EventCursor.upTo(0);
  let gaps: GapProver | undefined;
  const start = async () => {
    if (accounted) return;
    const first = await startingCursor(db);
    if (accounted || closed) return;
    accounted = first.cursor;
    gaps = createGapProver(db, log, accounted, deliver, first.probe);
  };
  const deliver = (e: StoredEvent) => {
    if (!accounted || accounted.has(e.seq)) return;
    accounted.add(e.seq);
    if (accounted.hasGaps()) gaps?.poke();
    for (const s of subscribers) {
      if (s.topics.size && !e.topics.some((t) => s.topics.has(t))) continue;
      try {
        s.handler(e);
      } catch (err) {
        log.warn({ err }, 'event subscriber threw');
      }
    }
  };

  // after a (re)connect: whatever committed while nobody listened (NOTIFY is heard only while connected)
  const catchUp = async () => {
    let after = 0;
    for (;;) {
      if (!accounted) return;
      const page = await readEventsOutside(db, accounted, { after, limit: CATCH_UP_PAGE });
      for (const e of page) deliver(e);
      const top = page.at(-1);
      if (!top || page.length < CATCH_UP_PAGE) return;
      after = top.seq;
    }
  };
  const onSeq = (seq: number, inline?: StoredEvent) => {
    delivering = delivering
      .then(async () => {
        // notifications come in commit order, one per committed event, while connected: an inline one is delivered
        // as it is (a hole below it is the gap prover's), a large one is read by its seq
        if (inline) return deliver(inline);
        if (seq === Number.MAX_SAFE_INTEGER) return catchUp();
        if (!accounted || accounted.has(seq)) return;
        for (const e of await readEventsOutside(db, EventCursor.upTo(seq - 1), { upTo: seq, limit: 1 })) deliver(e);
      })
      .catch((err) => log.warn({ err: { message: (err as Error).message } }, 'event catch-up failed'));
  };

  // Queries on the LISTEN connection go one after another: node-postgres queues a query sent while another runs, but
  // that use is deprecated (a DeprecationWarning on the process's stderr, removed in pg 9).
  const tails = new WeakMap<Client, Promise<unknown>>();
  const queryOn = (c: Client, sql: string): Promise<unknown> => {
    const next = (tails.get(c) ?? Promise.resolve()).catch(() => undefined).then(() => c.query(sql));
    tails.set(c, next);
    return next;
  };

  const connect = async (): Promise<void> => {
    if (closed) return;
    // a connect that gets no answer (a frozen server, a partition) is given up and tried again, so neither a start nor
    // a reconnect waits on it for as long as it stays silent
    const c = new Client({ connectionString, application_name: opts.applicationName ?? LISTENER_APPLICATION_NAME, keepAlive: true, connectionTimeoutMillis: CONNECT_TIMEOUT_MS });
    c.on('error', (err) => {
      log.warn({ err: { message: err.message } }, 'event listener connection lost; reconnecting');
      scheduleReconnect(c);
    });
    c.on('end', () => scheduleReconnect(c));
    c.on('notification', (msg) => {
      if (msg.channel !== EVENTS_CHANNEL) return tellWatchers(msg.channel, msg.payload ?? '');
      if (!msg.payload) return;
      try {
        const parsed = JSON.parse(msg.payload) as StoredEvent;
        onSeq(parsed.seq, parsed.type ? parsed : undefined);
      } catch {
        /* not ours */
      }
    });
    try {
      await c.connect();
      await start(); // before the LISTEN: what is stored now is the start, what commits later is heard or caught up
      if (withEvents) await queryOn(c, `LISTEN ${EVENTS_CHANNEL}`);
      client = c;
      heard = new Set();
      for (const channel of [...watchers.keys()]) {
        await queryOn(c, `LISTEN ${channel}`);
        if (client !== c) return;
        heard.add(channel);
      }
      tellAllWatchers(); // whatever was committed while we were not listening went unnoticed
      if (withEvents) onSeq(Number.MAX_SAFE_INTEGER); // catch up on whatever was committed while we were not listening
    } catch (err) {
      log.warn({ err: { message: (err as Error).message } }, 'event listener cannot connect; retrying');
      scheduleReconnect(c);
    }
  };

  const scheduleReconnect = (c: Client) => {
    if (client === c) {
      client = undefined;
      heard = new Set();
      tellAllWatchers();
    }
    c.removeAllListeners('end');
    c.end().catch(() => undefined);
    if (retryTimer || closed) return;
    retryTimer = setTimeout(() => {
      retryTimer = undefined;
      void connect();
    }, 1000);
  };

  // Barrier round trips: a caller joins the next round trip that starts after its call, never one already on the wire.
  let inFlight: Promise<boolean> | undefined;
  let queued: Promise<boolean> | undefined;
  const roundTrip = async (): Promise<boolean> => {
    const c = client;
    if (!c) return false;
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(false), BARRIER_TIMEOUT_MS);
    });
    const answered = queryOn(c, 'SELECT 1').then(
      () => client === c,
      () => false,
    );
    const ok = await Promise.race([answered, timedOut]);
    clearTimeout(timer);
    if (!ok && client === c) {
      log.warn('event listener connection does not answer; reconnecting');
      scheduleReconnect(c);
    }
    return ok;
  };
  const barrier = (): Promise<boolean> => {
    if (!inFlight) {
      inFlight = roundTrip().finally(() => {
        inFlight = undefined;
      });
      return inFlight;
    }
    if (!queued) {
      queued = inFlight.then(() => {
        queued = undefined;
        return barrier();
      });
    }
    return queued;
  };

  await connect();
  return {
    subscribe(topics, handler) {
      const s = { topics: new Set(topics), handler };
      subscribers.add(s);
      return () => subscribers.delete(s);
    },
    started: () => accounted !== undefined,
    lastSeq: () => accounted?.max() ?? 0,
    cursor: () => (accounted ?? EventCursor.upTo(0)).clone(),
    token: (own) => {
      const delivered = accounted ?? EventCursor.upTo(0);
      return own ? formatUnion(delivered, own) : delivered.toString();
    },
    watch(channel, handler) {
      if (!CHANNEL.test(channel)) throw new Error(`not a channel name: ${channel}`);
      let set = watchers.get(channel);
      if (!set) {
        set = new Set();
        watchers.set(channel, set);
        const c = client;
        // until this LISTEN is in place the channel is not heard: the watcher is told so once it is
        (c ? queryOn(c, `LISTEN ${channel}`) : undefined)?.then(
          () => {
            if (client !== c) return;
            heard.add(channel);
            tellWatchers(channel, null);
          },
          () => undefined,
        );
      }
      set.add(handler);
      return () => {
        set.delete(handler);
      };
    },
    barrier,
    hears: (channel) => client !== undefined && heard.has(channel),
    async close() {
      closed = true;
      if (retryTimer) clearTimeout(retryTimer);
      gaps?.stop();
      subscribers.clear();
      watchers.clear();
      const c = client;
      client = undefined;
      if (c) {
        c.removeAllListeners('end');
        await c.end().catch(() => undefined);
      }
    },
  };
}
