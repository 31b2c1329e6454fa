/** SQL for the traces table (message trace service D). */
import type { Queryable } from './pool';
import { jsonParam } from './storableText';

export const TRACE_STATUSES = ['sent', 'delivered', 'read', 'failed'] as const;
export type TraceStatus = (typeof TRACE_STATUSES)[number];

export interface TraceRow {
  id: string;
  message_id: string;
  instance: string;
  to_phone: string;
  message: string;
  status: TraceStatus;
  sent_at: Date;
  delivered_at: Date | null;
  read_at: Date | null;
  failed_at: Date | null;
  payload_headers: Record<string, unknown>;
  payload_body: Record<string, unknown>;
  created_at: Date;
  updated_at: Date;
}

/**
 * The columns of a TraceRow, named: the prepared statements below return exactly these. With `RETURNING *` their
 * result changed shape when a migration added a column while the service ran, and PostgreSQL refused each pooled
 * connection's next run ("cached plan must not change result type", a 500 and a trace not written).
 */
const COLUMNS = 'id, message_id, instance, to_phone, message, status, sent_at, delivered_at, read_at, failed_at, payload_headers, payload_body, created_at, updated_at';
const columnsOf = (alias: string) => COLUMNS.split(', ').map((c) => `${alias}.${c}`).join(', ');

export interface NewTrace {
  id: string;
  messageId: string;
  instance: string;
  /** already normalised (lib/phone.ts) */
  toPhone: string;
  message: string;
  status: TraceStatus;
  sentAt: Date | null;
  headers: Record<string, unknown>;
  body: Record<string, unknown>;
}

/**
 * Inserts a trace unless (instance, messageId) exists. `inserted` tells a new row from a repeat; a repeat returns
 * the stored trace unchanged (the first ingestion wins). A trace ingested already past `sent` gets its receipt times
 * from its sentAt (the only time known for them).
 */
export async function ingestTrace(db: Queryable, t: NewTrace): Promise<{ row: TraceRow; inserted: boolean }> {
  const params = [t.id, t.messageId, t.instance, t.toPhone, t.message, t.status, t.sentAt, jsonParam(t.headers), jsonParam(t.body)];
  // named: the hot ingestion path is parsed and planned once per connection
  const { rows } = await db.query<TraceRow & { inserted: boolean }>({
    name: 'traces_ingest',
    text: `WITH v AS (SELECT $6::text AS status, COALESCE($7::timestamptz, now()) AS sent_at),
     ins AS (
       INSERT INTO traces (id, message_id, instance, to_phone, message, status, sent_at, delivered_at, read_at, failed_at, payload_headers, payload_body)
       SELECT $1, $2, $3, $4, $5, v.status, v.sent_at,
              CASE WHEN v.status IN ('delivered', 'read') THEN v.sent_at END,
              CASE WHEN v.status = 'read' THEN v.sent_at END,
              CASE WHEN v.status = 'failed' THEN v.sent_at END,
              $8::jsonb, $9::jsonb
         FROM v
       ON CONFLICT (instance, message_id) DO NOTHING
       RETURNING ${COLUMNS}
     )
     SELECT ${columnsOf('ins')}, true AS inserted FROM ins
     UNION ALL
     SELECT ${columnsOf('t')}, false AS inserted FROM traces t WHERE t.instance = $3 AND t.message_id = $2 AND NOT EXISTS (SELECT 1 FROM ins)`,
    values: params,
  });
  const row = rows[0];
  if (!row) {
    // A concurrent first ingestion committed after this statement's snapshot: it is visible to a new statement.
    const again = await db.query<TraceRow>(`SELECT ${COLUMNS} FROM traces WHERE instance = $1 AND message_id = $2`, [t.instance, t.messageId]);
    if (!again.rows[0]) throw new Error('trace vanished between its conflicting insert and the re-read');
    return { row: again.rows[0], inserted: false };
  }
  const { inserted, ...trace } = row;
  return { row: trace as TraceRow, inserted };
}

export async function getTrace(db: Queryable, id: string): Promise<TraceRow | undefined> {
  const { rows } = await db.query<TraceRow>(`SELECT ${COLUMNS} FROM traces WHERE id = $1`, [id]);
  return rows[0];
}

/**
 * Applies a status receipt in one statement (the row lock orders concurrent receipts, each sees the previous
 * one's result): sent → delivered → read only forward; failed only from sent, and terminal. A `read` also fills
 * deliveredAt; receipt times keep the earliest reported value and are never before sentAt. A receipt that cannot
 * move the trace leaves the status as it is. Returns undefined for an unknown id.
 */
export async function applyStatusReceipt(db: Queryable, id: string, status: TraceStatus, at: Date | null): Promise<TraceRow | undefined> {
  const { rows } = await db.query<TraceRow>({
    name: 'traces_status_receipt',
    text: `UPDATE traces t SET
        status = CASE
          WHEN t.status = 'failed' THEN t.status
          WHEN $2 = 'failed' THEN CASE WHEN t.status = 'sent' THEN 'failed' ELSE t.status END
          WHEN $2 = 'read' THEN 'read'
          WHEN $2 = 'delivered' AND t.status = 'sent' THEN 'delivered'
          ELSE t.status END,
        delivered_at = CASE WHEN t.status <> 'failed' AND $2 IN ('delivered', 'read')
          THEN LEAST(t.delivered_at, GREATEST(COALESCE($3::timestamptz, now()), t.sent_at)) ELSE t.delivered_at END,
        read_at = CASE WHEN t.status <> 'failed' AND $2 = 'read'
          THEN LEAST(t.read_at, GREATEST(COALESCE($3::timestamptz, now()), t.sent_at)) ELSE t.read_at END,
        failed_at = CASE WHEN t.status = 'sent' AND $2 = 'failed'
          THEN GREATEST(COALESCE($3::timestamptz, now()), t.sent_at) ELSE t.failed_at END,
        updated_at = now()
      WHERE t.id = $1
      RETURNING ${columnsOf('t')}`,
    values: [id, status, at],
  });
  return rows[0];
}

export interface TraceFilter {
  instance?: string;
  /** normalised */
  phone?: string;
  status?: TraceStatus;
}

/** Newest first (sentAt, then id), with the total that matches the filter. */
export async function listTraces(db: Queryable, filter: TraceFilter, limit: number, offset: number): Promise<{ rows: TraceRow[]; total: number }> {
  const where: string[] = [];
  const values: unknown[] = [];
  const add = (column: string, value: unknown) => {
    values.push(value);
    where.push(`${column} = $${values.length}`);
  };
  if (filter.instance !== undefined) add('instance', filter.instance);
  if (filter.phone !== undefined) add('to_phone', filter.phone);
  if (filter.status !== undefined) add('status', filter.status);
  const clause = where.length ? `WHERE ${where.join(' AND ')}` : '';
  const [list, count] = await Promise.all([
    db.query<TraceRow>(
      `SELECT id, message_id, instance, to_phone, message, status, sent_at, delivered_at, read_at, failed_at, created_at, updated_at
         FROM traces ${clause} ORDER BY sent_at DESC, id DESC LIMIT $${values.length + 1} OFFSET $${values.length + 2}`,
      [...values, limit, offset],
    ),
    db.query<{ n: string }>(`SELECT count(*) AS n FROM traces ${clause}`, values),
  ]);
  return { rows: list.rows, total: Number(count.rows[0]?.n ?? 0) };
}

export interface TraceAnalytics {
  period: { start: string; end: string };
  totalMessages: number;
  byStatus: Record<TraceStatus, number>;
  byInstance: Record<string, number>;
  byDay: { date: string; count: number; byStatus: Record<TraceStatus, number> }[];
}

/**
 * Counts of the traces sent in the last `days` UTC calendar days (today included, from 00:00 UTC of the first day
 * up to now), in one statement: one aggregate pass over the window (an index-only scan of traces_sent_idx), rolled up per
 * status, instance and day (each day also split by status); every day present (generate_series).
 */
export async function traceAnalytics(db: Queryable, days: number): Promise<TraceAnalytics> {
  const { rows } = await db.query<{ result: TraceAnalytics }>(
    `WITH bounds AS (
       SELECT (date_trunc('day', now() AT TIME ZONE 'UTC') - make_interval(days => $1::int - 1)) AT TIME ZONE 'UTC' AS start_at,
              now() AS end_at
     ),
     -- one hash aggregate over the window (at most statuses × instances × days groups), then roll-ups of that small set
     g AS (
       SELECT t.status, t.instance, (t.sent_at AT TIME ZONE 'UTC')::date AS day, count(*)::int AS n
         FROM traces t, bounds b
        WHERE t.sent_at >= b.start_at AND t.sent_at <= b.end_at
        GROUP BY 1, 2, 3
     )
     SELECT json_build_object(
       'period', json_build_object(
          'start', to_char(b.start_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
          'end', to_char(b.end_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')),
       'totalMessages', (SELECT COALESCE(sum(n), 0)::int FROM g),
       'byStatus', (SELECT json_object_agg(s.status, COALESCE((SELECT sum(n) FROM g WHERE g.status = s.status), 0)::int ORDER BY s.ord)
                      FROM unnest(ARRAY['sent', 'delivered', 'read', 'failed']) WITH ORDINALITY AS s(status, ord)),
       'byInstance', COALESCE((SELECT json_object_agg(i.instance, i.n ORDER BY i.instance)
                                 FROM (SELECT instance, sum(n)::int AS n FROM g GROUP BY instance) i), '{}'::json),
       'byDay', (SELECT json_agg(json_build_object(
                          'date', to_char(d.day, 'YYYY-MM-DD'),
                          'count', COALESCE(c.n, 0),
                          'byStatus', json_build_object('sent', COALESCE(c.sent, 0), 'delivered', COALESCE(c.delivered, 0),
                                                        'read', COALESCE(c.read, 0), 'failed', COALESCE(c.failed, 0))) ORDER BY d.day)
                   FROM generate_series((b.start_at AT TIME ZONE 'UTC')::date, (b.end_at AT TIME ZONE 'UTC')::date, interval '1 day') AS d(day)
                   LEFT JOIN (SELECT day, sum(n)::int AS n,
                                     (sum(n) FILTER (WHERE status = 'sent'))::int AS sent,
                                     (sum(n) FILTER (WHERE status = 'delivered'))::int AS delivered,
                                     (sum(n) FILTER (WHERE status = 'read'))::int AS read,
                                     (sum(n) FILTER (WHERE status = 'failed'))::int AS failed
                                FROM g GROUP BY day) c ON c.day = d.day::date)
     ) AS result
     FROM bounds b`,
    [days],
  );
  return (rows[0] as { result: TraceAnalytics }).result;
}
