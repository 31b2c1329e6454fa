/**
 * One LISTEN connection per process fans events out to in-process subscribers (WebSocket and SSE streams).
 * It reconnects after a PostgreSQL restart and catches up from the events table by seq, so no event committed while
 * the connection was down is missed.
 *
 * The same connection carries other channels (`watch`) and a read barrier (`barrier`) for caches that are dropped on
 * a NOTIFY: see lib/events/invalidatingCache.ts.
 */
import { Client } from 'pg';
import type { Pool } from 'pg';
import type { Logger } from '../logger';
import { EVENTS_CHANNEL, latestEventSeq, readEventsAfter, type StoredEvent } from './publish';

export type EventHandler = (event: StoredEvent) => void;
/** A notification's payload, or null when the connection was lost or re-established (notifications may be missed). */
export type ChannelHandler = (payload: string | null) => void;

/** How the LISTEN connection shows in pg_stat_activity. */
export const LISTENER_APPLICATION_NAME = 'armada-listener';
const CHANNEL = /^[a-z_][a-z0-9_]{0,62}$/;
const BARRIER_TIMEOUT_MS = 2000;

export interface EventListener {
  /** Calls `handler` for every event with one of `topics` (every event when topics is empty). Returns unsubscribe. */
  subscribe(topics: string[], handler: EventHandler): () => void;
  /** Seq of the last event delivered to subscribers. */
  lastSeq(): number;
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
  let last = withEvents ? await latestEventSeq(db) : 0;
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

  // Seqs of concurrent transactions can commit out of order (7 before 6), so delivery is tracked per seq within a
  // window, not by a high-water mark alone; catch-up rereads the window and skips what was delivered.
  const WINDOW = 2000;
  const delivered = new Set<number>();
  // every seq up to `complete` has been delivered (or was there before this listener started): catch-up reads
  // only after it. Without it each out-of-order arrival reread the whole window (with 50 agents publishing progress
  // events, ~430 rows per catch-up, 130 catch-ups in 20 s). A seq that never commits (a rolled-back insert) holds it
  // back, and then the window bounds the read as before.
  let complete = last;
  const deliver = (e: StoredEvent) => {
    if (delivered.has(e.seq) || e.seq <= last - WINDOW) return;
    delivered.add(e.seq);
    if (e.seq > last) last = e.seq;
    complete = Math.max(complete, last - WINDOW); // below the window nothing is delivered any more
    while (delivered.has(complete + 1)) complete++;
    if (delivered.size > WINDOW * 2) for (const s of delivered) if (s <= last - WINDOW) delivered.delete(s);
    for (const s of subscribers) {
      if (s.topics.size && !e.topics.some((t) => s.topics.has(t))) continue;
      try {
        s.handler(e);
      } catch (err) {
        log.warn({ err }, 'event subscriber threw');
      }
    }
  };

  const catchUp = async () => {
    for (const e of await readEventsAfter(db, Math.max(0, complete, last - WINDOW), { limit: 10_000 })) deliver(e);
  };
  const onSeq = (seq: number, inline?: StoredEvent) => {
    delivering = delivering
      .then(async () => {
        if (inline && (seq === last + 1 || seq < last)) return deliver(inline);
        await catchUp(); // a gap (or no inline body): read what is committed
        if (inline) deliver(inline);
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
    const c = new Client({ connectionString, application_name: opts.applicationName ?? LISTENER_APPLICATION_NAME, keepAlive: true });
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
    lastSeq: () => last,
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
