/**
 * Publishing domain events: one row in the `events` outbox plus a NOTIFY, in the caller's transaction when it passes
 * a transaction client, so an event exists exactly when the change it describes was committed.
 */
import type { Queryable } from '../db/pool';

export const EVENTS_CHANNEL = 'armada_events';

export interface DomainEvent {
  /** e.g. task.created, task.status_changed, attempt.failed, process_started, draft_created */
  type: string;
  /** What subscribers filter on: `task:<id>`, `attempt:<id>`, `process:<id>`, `project:<id>`… */
  topics: string[];
  data: Record<string, unknown>;
}

export interface StoredEvent extends DomainEvent {
  seq: number;
  createdAt: string;
}

/** NOTIFY payloads are limited to 8000 bytes: large events travel by seq and are read back by the listener. */
const MAX_INLINE = 7000;

export async function publishEvent(db: Queryable, event: DomainEvent): Promise<StoredEvent> {
  const { rows } = await db.query<{ seq: string; created_at: Date }>(
    'INSERT INTO events (type, topics, data) VALUES ($1, $2, $3) RETURNING seq, created_at',
    [event.type, event.topics, event.data],
  );
  const row = rows[0] as { seq: string; created_at: Date };
  const stored: StoredEvent = { ...event, seq: Number(row.seq), createdAt: row.created_at.toISOString() };
  const inline = JSON.stringify(stored);
  await db.query('SELECT pg_notify($1, $2)', [EVENTS_CHANNEL, inline.length <= MAX_INLINE ? inline : JSON.stringify({ seq: stored.seq })]);
  return stored;
}

/**
 * The NOTIFYs of events inserted by a statement's own CTE (`INSERT INTO events … RETURNING seq, type, topics, data,
 * created_at`), as an SQL expression for its final SELECT, so a state change and its events take one round trip.
 * Same payload as publishEvent: the stored event inline when it fits, else its seq; in seq order.
 */
export function notifyInsertedEventsSql(cte: string): string {
  return `(SELECT count(pg_notify('${EVENTS_CHANNEL}', CASE WHEN length(x.p) <= ${MAX_INLINE} THEN x.p ELSE json_build_object('seq', x.seq)::text END))
     FROM (SELECT seq, json_build_object('type', type, 'topics', topics, 'data', data, 'seq', seq,
                  'createdAt', to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))::text AS p
             FROM ${cte} ORDER BY seq) x)`;
}

interface EventRow {
  seq: string;
  type: string;
  topics: string[];
  data: Record<string, unknown>;
  created_at: Date;
}

export function toStoredEvent(r: EventRow): StoredEvent {
  return { seq: Number(r.seq), type: r.type, topics: r.topics, data: r.data, createdAt: r.created_at.toISOString() };
}

/** Events after `afterSeq` (optionally only those with one of `topics`), oldest first: resume and catch-up. */
export async function readEventsAfter(db: Queryable, afterSeq: number, opts: { topics?: string[]; limit?: number } = {}): Promise<StoredEvent[]> {
  const values: unknown[] = [afterSeq, opts.limit ?? 1000];
  let filter = '';
  if (opts.topics?.length) {
    values.push(opts.topics);
    filter = 'AND topics && $3::text[]';
  }
  const { rows } = await db.query<EventRow>(`SELECT * FROM events WHERE seq > $1 ${filter} ORDER BY seq LIMIT $2`, values);
  return rows.map(toStoredEvent);
}

export async function latestEventSeq(db: Queryable): Promise<number> {
  const { rows } = await db.query<{ seq: string | null }>('SELECT max(seq) AS seq FROM events');
  return Number(rows[0]?.seq ?? 0);
}
