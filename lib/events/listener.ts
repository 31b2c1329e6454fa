/**
 * One LISTEN connection per process fans events out to in-process subscribers (WebSocket and SSE streams).
 * It reconnects after a PostgreSQL restart and catches up from the events table by seq, so no event committed while
 * the connection was down is missed.
 */
import { Client } from 'pg';
import type { Pool } from 'pg';
import type { Logger } from '../logger';
import { EVENTS_CHANNEL, latestEventSeq, readEventsAfter, type StoredEvent } from './publish';

export type EventHandler = (event: StoredEvent) => void;

export interface EventListener {
  /** Calls `handler` for every event with one of `topics` (every event when topics is empty). Returns unsubscribe. */
  subscribe(topics: string[], handler: EventHandler): () => void;
  /** Seq of the last event delivered to subscribers. */
  lastSeq(): number;
  close(): Promise<void>;
}

export async function createEventListener(connectionString: string, db: Pool, logger: Logger): Promise<EventListener> {
  const log = logger.child({ component: 'events' });
  const subscribers = new Set<{ topics: Set<string>; handler: EventHandler }>();
  let last = await latestEventSeq(db);
  let client: Client | undefined;
  let closed = false;
  let retryTimer: NodeJS.Timeout | undefined;
  let delivering = Promise.resolve();

  // Seqs of concurrent transactions can commit out of order (7 before 6), so delivery is tracked per seq within a
  // window, not by a high-water mark alone; catch-up rereads the window and skips what was delivered.
  const WINDOW = 2000;
  const delivered = new Set<number>();
  const deliver = (e: StoredEvent) => {
    if (delivered.has(e.seq) || e.seq <= last - WINDOW) return;
    delivered.add(e.seq);
    if (e.seq > last) last = e.seq;
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
    for (const e of await readEventsAfter(db, Math.max(0, last - WINDOW), { limit: 10_000 })) deliver(e);
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

  const connect = async (): Promise<void> => {
    if (closed) return;
    const c = new Client({ connectionString });
    c.on('error', (err) => {
      log.warn({ err: { message: err.message } }, 'event listener connection lost; reconnecting');
      scheduleReconnect(c);
    });
    c.on('end', () => scheduleReconnect(c));
    c.on('notification', (msg) => {
      if (msg.channel !== EVENTS_CHANNEL || !msg.payload) return;
      try {
        const parsed = JSON.parse(msg.payload) as StoredEvent;
        onSeq(parsed.seq, parsed.type ? parsed : undefined);
      } catch {
        /* not ours */
      }
    });
    try {
      await c.connect();
      await c.query(`LISTEN ${EVENTS_CHANNEL}`);
      client = c;
      onSeq(Number.MAX_SAFE_INTEGER); // catch up on whatever was committed while we were not listening
    } catch (err) {
      log.warn({ err: { message: (err as Error).message } }, 'event listener cannot connect; retrying');
      scheduleReconnect(c);
    }
  };

  const scheduleReconnect = (c: Client) => {
    if (client === c) client = undefined;
    c.removeAllListeners('end');
    c.end().catch(() => undefined);
    if (retryTimer || closed) return;
    retryTimer = setTimeout(() => {
      retryTimer = undefined;
      void connect();
    }, 1000);
  };

  await connect();
  return {
    subscribe(topics, handler) {
      const s = { topics: new Set(topics), handler };
      subscribers.add(s);
      return () => subscribers.delete(s);
    },
    lastSeq: () => last,
    async close() {
      closed = true;
      if (retryTimer) clearTimeout(retryTimer);
      subscribers.clear();
      const c = client;
      client = undefined;
      if (c) {
        c.removeAllListeners('end');
        await c.end().catch(() => undefined);
      }
    },
  };
}
