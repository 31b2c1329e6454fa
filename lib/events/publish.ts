/**
 * Publishing domain events: one row in the `events` outbox plus a NOTIFY, in the caller's transaction when it passes
 * a transaction client, so an event exists exactly when the change it describes was committed.
 */
import type { Queryable } from '../db/pool';
import { jsonParam } from '../db/storableText';
import { EventCursor } from './eventCursor';

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

/**
 * NOTIFY payloads are limited to 8000 bytes: larger events travel by seq and are read back by the listener. Counted
 * in bytes (octet_length), so an event with multi-byte text never makes pg_notify fail its transaction.
 */
const MAX_INLINE = 7000;

/** One event: its row in the outbox and its NOTIFY, in one round trip (one statement). */
export async function publishEvent(db: Queryable, event: DomainEvent): Promise<StoredEvent> {
  return (await publishEvents(db, [event]))[0] as StoredEvent;
}

/** Several events in one statement (one round trip): rows in the given order (ascending seq), NOTIFYs in seq order. */
export async function publishEvents(db: Queryable, events: DomainEvent[]): Promise<StoredEvent[]> {
  if (!events.length) return [];
  const { rows } = await db.query<{ seq: string; created_at: Date; notified: string }>(
    `WITH ev AS (
       INSERT INTO events (type, topics, data)
       SELECT x.t, x.tp, x.d FROM ROWS FROM (jsonb_to_recordset($1::jsonb) AS (t text, tp text[], d jsonb)) WITH ORDINALITY AS x(t, tp, d, o) ORDER BY x.o
       RETURNING seq, type, topics, data, created_at)
     SELECT seq, created_at, ${notifyInsertedEventsSql('ev')} AS notified FROM ev ORDER BY seq`,
    [jsonParam(events.map((e) => ({ t: e.type, tp: e.topics, d: e.data })))],
  );
  return events.map((e, i) => {
    const row = rows[i] as { seq: string; created_at: Date };
    return { ...e, seq: Number(row.seq), createdAt: row.created_at.toISOString() };
  });
}

/**
 * The NOTIFYs of events inserted by a statement's own CTE (`INSERT INTO events … RETURNING seq, type, topics, data,
 * created_at`), as an SQL expression for its final SELECT, so a state change and its events take one round trip.
 * The payload is the stored event inline when it fits, else its seq; in seq order.
 */
export function notifyInsertedEventsSql(cte: string): string {
  return `(SELECT count(pg_notify('${EVENTS_CHANNEL}', CASE WHEN octet_length(x.p) <= ${MAX_INLINE} THEN x.p ELSE json_build_object('seq', x.seq)::text END))
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
  return readEventsOutside(db, EventCursor.upTo(afterSeq), opts);
}

/**
 * Events whose seq `known` does not hold (and above `after`, at most `upTo`), optionally only those with one of
 * `topics`, oldest first: a resume from a cursor with holes reads what fills them and what follows.
 */
export async function readEventsOutside(
  db: Queryable,
  known: EventCursor,
  opts: { after?: number; upTo?: number; topics?: string[]; limit?: number } = {},
): Promise<StoredEvent[]> {
  const values: unknown[] = [Math.max(known.watermark, opts.after ?? 0), opts.limit ?? 1000];
  let filter = '';
  if (opts.topics?.length) {
    values.push(opts.topics);
    filter += ` AND topics && $${values.length}::text[]`;
  }
  if (opts.upTo !== undefined) {
    values.push(opts.upTo);
    filter += ` AND seq <= $${values.length}`;
  }
  const ranges = known.above();
  if (ranges.length) {
    values.push(ranges.map((r) => r[0]), ranges.map((r) => r[1]));
    filter += ` AND NOT EXISTS (SELECT 1 FROM unnest($${values.length - 1}::bigint[], $${values.length}::bigint[]) AS r(lo, hi) WHERE events.seq BETWEEN r.lo AND r.hi)`;
  }
  const { rows } = await db.query<EventRow>(`SELECT * FROM events WHERE seq > $1${filter} ORDER BY seq LIMIT $2`, values);
  return rows.map(toStoredEvent);
}

export async function latestEventSeq(db: Queryable): Promise<number> {
  const { rows } = await db.query<{ seq: string | null }>('SELECT max(seq) AS seq FROM events');
  return Number(rows[0]?.seq ?? 0);
}
