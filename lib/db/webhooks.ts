/** SQL for webhooks, the dispatcher cursor and the delivery log. */
import type { Queryable } from './pool';

/** Events a webhook may subscribe to (published through the events outbox). */
export const WEBHOOK_EVENTS = [
  'task.created',
  'task.status_changed',
  'task.completed',
  'task.failed',
  'task.cancelled',
  'attempt.started',
  'attempt.completed',
  'attempt.failed',
  'attempt.cancelled',
  'approval.created',
  'approval.approved',
  'approval.rejected',
  'approval.expired',
  'approval.cancelled',
] as const;
export type WebhookEvent = (typeof WEBHOOK_EVENTS)[number];

export interface WebhookRow {
  id: string;
  url: string;
  events: string[];
  secret: string;
  active: boolean;
  created_at: Date;
}

export interface DeliveryRow {
  id: string;
  webhook_id: string;
  event_seq: string;
  event_type: string;
  attempt: number;
  status_code: number | null;
  success: boolean;
  error: string | null;
  duration_ms: number;
  /** the try was an open breaker's probe (migration 104) */
  probe: boolean;
  created_at: Date;
}

export async function insertWebhook(db: Queryable, w: { id: string; url: string; events: string[]; sealedSecret: string }): Promise<WebhookRow> {
  const { rows } = await db.query<WebhookRow>('INSERT INTO webhooks (id, url, events, secret) VALUES ($1, $2, $3, $4) RETURNING *', [
    w.id,
    w.url,
    w.events,
    w.sealedSecret,
  ]);
  return rows[0] as WebhookRow;
}

export async function getWebhook(db: Queryable, id: string): Promise<WebhookRow | undefined> {
  const { rows } = await db.query<WebhookRow>('SELECT * FROM webhooks WHERE id = $1', [id]);
  return rows[0];
}

export async function listWebhooks(db: Queryable, limit: number, offset: number): Promise<{ rows: WebhookRow[]; total: number }> {
  const [list, count] = await Promise.all([
    db.query<WebhookRow>('SELECT * FROM webhooks ORDER BY created_at DESC, id DESC LIMIT $1 OFFSET $2', [limit, offset]),
    db.query<{ n: string }>('SELECT count(*) AS n FROM webhooks'),
  ]);
  return { rows: list.rows, total: Number(count.rows[0]?.n ?? 0) };
}

export async function deleteWebhook(db: Queryable, id: string): Promise<boolean> {
  const { rowCount } = await db.query('DELETE FROM webhooks WHERE id = $1', [id]);
  return (rowCount ?? 0) > 0;
}

/** The active webhooks, the event types each subscribes to and when it was made, by id (one read per dispatch pass). */
export async function activeSubscriptions(db: Queryable): Promise<Array<{ id: string; events: string[]; created_at: Date }>> {
  const { rows } = await db.query<{ id: string; events: string[]; created_at: Date }>('SELECT id, events, created_at FROM webhooks WHERE active ORDER BY id');
  return rows;
}

/** One row per try, idempotent when Temporal re-runs the same try's activity. */
export async function recordDelivery(
  db: Queryable,
  d: {
    webhookId: string;
    eventSeq: number;
    eventType: string;
    attempt: number;
    statusCode: number | null;
    success: boolean;
    error: string | null;
    durationMs: number;
    probe: boolean;
  },
): Promise<void> {
  await db.query(
    `INSERT INTO webhook_deliveries (webhook_id, event_seq, event_type, attempt, status_code, success, error, duration_ms, probe)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
     ON CONFLICT (webhook_id, event_seq, attempt) DO UPDATE
       SET status_code = EXCLUDED.status_code, success = EXCLUDED.success, error = EXCLUDED.error, duration_ms = EXCLUDED.duration_ms, probe = EXCLUDED.probe`,
    [d.webhookId, d.eventSeq, d.eventType, d.attempt, d.statusCode, d.success, d.error, d.durationMs, d.probe],
  );
}

export async function listDeliveries(db: Queryable, webhookId: string, limit: number, offset: number): Promise<{ rows: DeliveryRow[]; total: number }> {
  const [list, count] = await Promise.all([
    db.query<DeliveryRow>('SELECT * FROM webhook_deliveries WHERE webhook_id = $1 ORDER BY created_at DESC, id DESC LIMIT $2 OFFSET $3', [webhookId, limit, offset]),
    db.query<{ n: string }>('SELECT count(*) AS n FROM webhook_deliveries WHERE webhook_id = $1', [webhookId]),
  ]);
  return { rows: list.rows, total: Number(count.rows[0]?.n ?? 0) };
}

/**
 * A delivery's tries in the log: the number of its last try (tries are numbered 1, 2, … in the log) and how many of
 * them count towards webhooks.maxTries (those that were not an open breaker's probe).
 */
export async function deliveryTries(db: Queryable, webhookId: string, eventSeq: number): Promise<{ last: number; counted: number }> {
  const { rows } = await db.query<{ last: number | null; counted: number }>(
    'SELECT max(attempt) AS last, (count(*) FILTER (WHERE NOT probe))::integer AS counted FROM webhook_deliveries WHERE webhook_id = $1 AND event_seq = $2',
    [webhookId, eventSeq],
  );
  return { last: rows[0]?.last ?? 0, counted: rows[0]?.counted ?? 0 };
}
