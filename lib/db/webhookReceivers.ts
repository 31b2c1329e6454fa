/**
 * SQL for the webhooks' receiver state (migration 104): the breaker the deliver activity keeps per webhook. Times
 * are compared with PostgreSQL's clock only, so workers whose clocks differ agree on whose turn it is.
 */
import type { Queryable } from './pool';

export interface ReceiverRow {
  webhook_id: string;
  consecutive_failures: number;
  failing_since: Date | null;
  probe_at: Date | null;
  probe_interval_ms: number;
  probe_holder: string | null;
  probe_lease_until: Date | null;
  /** ms from now to probe_at (0 when due or none) */
  probe_in_ms: number;
  /** ms left of the probe's lease (0 when none or expired) */
  lease_left_ms: number;
}

const COLUMNS = `*,
  GREATEST(0, CEIL(EXTRACT(EPOCH FROM (probe_at - now())) * 1000))::integer AS probe_in_ms,
  GREATEST(0, CEIL(EXTRACT(EPOCH FROM (probe_lease_until - now())) * 1000))::integer AS lease_left_ms`;

export async function getReceiver(db: Queryable, webhookId: string): Promise<ReceiverRow | undefined> {
  const { rows } = await db.query<ReceiverRow>(`SELECT ${COLUMNS} FROM webhook_receivers WHERE webhook_id = $1`, [webhookId]);
  return rows[0];
}

/** The receiver state of each of these webhooks that has one (a webhook without a row has never failed). */
export async function receiversOf(db: Queryable, webhookIds: string[]): Promise<Map<string, ReceiverRow>> {
  if (webhookIds.length === 0) return new Map();
  const { rows } = await db.query<ReceiverRow>(`SELECT ${COLUMNS} FROM webhook_receivers WHERE webhook_id = ANY($1)`, [webhookIds]);
  return new Map(rows.map((r) => [r.webhook_id, r]));
}

/**
 * Takes the probe of an open breaker for `holder` (a delivery), when it is due and nobody holds it (or the holder's
 * lease ran out, or the holder is this delivery again): true for exactly one of the deliveries asking at once.
 */
export async function claimProbe(db: Queryable, webhookId: string, holder: string, opts: { openAfterFailures: number; leaseMs: number }): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE webhook_receivers
        SET probe_holder = $2, probe_lease_until = now() + $3::integer * interval '1 millisecond'
      WHERE webhook_id = $1 AND consecutive_failures >= $4 AND probe_at <= now()
        AND (probe_holder IS NULL OR probe_holder = $2 OR probe_lease_until < now())`,
    [webhookId, holder, opts.leaseMs, opts.openAfterFailures],
  );
  return (rowCount ?? 0) > 0;
}

/** The receiver answered (a 2xx, or a final 3xx/4xx): the breaker closes. Writes nothing when it was closed. */
export async function recordReceiverAnswered(db: Queryable, webhookId: string): Promise<void> {
  await db.query(
    `UPDATE webhook_receivers
        SET consecutive_failures = 0, failing_since = NULL, probe_at = NULL, probe_interval_ms = 0, probe_holder = NULL, probe_lease_until = NULL
      WHERE webhook_id = $1 AND (consecutive_failures > 0 OR probe_holder IS NOT NULL)`,
    [webhookId],
  );
}

/**
 * A try failed without an answer that counts (5xx, 408, 429, timeout, connection error). The failure that opens the
 * breaker sets the first probe `initialMs` out; a failed probe (`holder` held it) doubles the pause, up to `maxMs`,
 * and gives the probe up; a try that was already under way when the breaker opened only adds to the count.
 */
export async function recordReceiverFailure(
  db: Queryable,
  webhookId: string,
  holder: string,
  opts: { openAfterFailures: number; initialMs: number; maxMs: number },
): Promise<ReceiverRow> {
  // the counts and pauses are computed from the row as it is when this statement takes it (r: ON CONFLICT locks
  // it), so concurrent failures each count
  const { rows } = await db.query<ReceiverRow>(
    `INSERT INTO webhook_receivers AS r (webhook_id, consecutive_failures, failing_since, probe_at, probe_interval_ms)
     VALUES ($1, 1, now(), CASE WHEN $3::integer <= 1 THEN now() + $4::integer * interval '1 millisecond' END, CASE WHEN $3::integer <= 1 THEN $4::integer ELSE 0 END)
     ON CONFLICT (webhook_id) DO UPDATE SET
       consecutive_failures = r.consecutive_failures + 1,
       failing_since = COALESCE(r.failing_since, now()),
       probe_interval_ms = CASE WHEN r.consecutive_failures + 1 < $3::integer THEN r.probe_interval_ms
                                WHEN r.probe_at IS NULL THEN $4::integer
                                WHEN r.probe_holder = $2 THEN LEAST($5::integer, GREATEST($4::integer, r.probe_interval_ms * 2))
                                ELSE r.probe_interval_ms END,
       probe_at = CASE WHEN r.consecutive_failures + 1 < $3::integer THEN r.probe_at
                       WHEN r.probe_at IS NULL THEN now() + $4::integer * interval '1 millisecond'
                       WHEN r.probe_holder = $2 THEN now() + LEAST($5::integer, GREATEST($4::integer, r.probe_interval_ms * 2)) * interval '1 millisecond'
                       ELSE r.probe_at END,
       probe_holder = CASE WHEN r.probe_holder = $2 THEN NULL ELSE r.probe_holder END,
       probe_lease_until = CASE WHEN r.probe_holder = $2 THEN NULL ELSE r.probe_lease_until END
     RETURNING ${COLUMNS}`,
    [webhookId, holder, opts.openAfterFailures, opts.initialMs, opts.maxMs],
  );
  return rows[0] as ReceiverRow;
}
