/**
 * SQL for scheduler_schedules (service B): every schedule of every workflow, each one Temporal Schedule. A workflow's
 * default schedule row exists from its creation; it counts as a schedule only once it has a cron.
 */
import type { Queryable } from './pool';
import { jsonParam } from './storableText';

export type ScheduleType = 'cron' | 'one-time';

export interface ScheduleRow {
  id: string;
  workflow: string;
  /** the workflow's immutable id (scheduler_workflows.id): its runs carry it */
  workflow_id: string;
  temporal_id: string;
  is_default: boolean;
  type: ScheduleType;
  cron: string | null;
  at: string | null;
  run_at: Date | null;
  timezone: string;
  jitter_ms: number;
  enabled: boolean;
  input: unknown;
  ran_at: Date | null;
  created_at: Date;
  updated_at: Date;
  /** start of the newest execution this schedule started */
  last_run: Date | null;
}

export interface NewSchedule {
  id: string;
  workflow: string;
  temporalId: string;
  type: ScheduleType;
  cron: string | null;
  at: string | null;
  runAt: Date | null;
  timezone: string;
  jitterMs: number;
  enabled: boolean;
  input: unknown;
}

/** jsonb parameter: SQL NULL for no input (undefined or null), else the JSON text. */
const jsonOrNull = (v: unknown): string | null => (v === undefined || v === null ? null : jsonParam(v));

const SELECT = `SELECT s.*, (SELECT w.id FROM scheduler_workflows w WHERE w.name = s.workflow) AS workflow_id,
       (SELECT max(e.started_at) FROM scheduler_executions e WHERE e.schedule_id = s.id) AS last_run
  FROM scheduler_schedules s`;
// A default row without a cron is no schedule (the workflow has none yet).
const IS_SCHEDULE = `(s.type = 'one-time' OR s.cron IS NOT NULL)`;

export async function insertSchedule(db: Queryable, s: NewSchedule): Promise<ScheduleRow> {
  await db.query(
    `INSERT INTO scheduler_schedules (id, workflow, temporal_id, type, cron, at, run_at, timezone, jitter_ms, enabled, input)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11::jsonb)`,
    [s.id, s.workflow, s.temporalId, s.type, s.cron, s.at, s.runAt, s.timezone, s.jitterMs, s.enabled, jsonOrNull(s.input)],
  );
  return (await getSchedule(db, s.workflow, s.id)) as ScheduleRow;
}

/** One schedule of a workflow (a default row without a cron is not one). */
export async function getSchedule(db: Queryable, workflow: string, id: string): Promise<ScheduleRow | undefined> {
  const { rows } = await db.query<ScheduleRow>(`${SELECT} WHERE s.workflow = $1 AND s.id = $2 AND ${IS_SCHEDULE}`, [workflow, id]);
  return rows[0];
}

/**
 * A schedule row (a default row with or without a cron) by id, as committed; a change reads it under
 * lockScheduleChanges, so the changes before it have committed and none writes it until this one has.
 */
export async function getScheduleById(db: Queryable, id: string): Promise<ScheduleRow | undefined> {
  const { rows } = await db.query<ScheduleRow>(`${SELECT} WHERE s.id = $1`, [id]);
  return rows[0];
}

/**
 * Serialises the writers of one Temporal Schedule id inside their transactions (an advisory lock, held to the end of
 * the transaction): a route creating it with its row, and a resync making Temporal match the row (which must not see
 * "no row" while the row is being inserted).
 */
export async function lockTemporalSchedule(db: Queryable, temporalId: string): Promise<void> {
  await db.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`armada-scheduler-schedule:${temporalId}`]);
}

/**
 * lockTemporalSchedule for a change of an existing schedule (a PATCH, a pause or resume, a DELETE): the writers of one
 * Temporal Schedule take turns under it, each holding it across its Temporal call, and it is the only lock a change
 * holds there (its row is written after the call, in a moment). A change waits for the one in progress at most
 * `waitMs` (its own lock_timeout for this one statement; the transaction's comes back after it), so a waiter learns
 * within that time that another change is still waiting for Temporal: false, the transaction aborted, for the caller's
 * 409. Before, the waiter queued on the row's lock, held for up to the Temporal call's 10 s, and got the API's
 * lock_timeout 503 after 5 s, worded as a stuck database transaction.
 */
export async function lockScheduleChanges(db: Queryable, temporalId: string, waitMs: number): Promise<boolean> {
  const { rows } = await db.query<{ before: string }>(
    "WITH b AS (SELECT current_setting('lock_timeout') AS before) SELECT before, set_config('lock_timeout', $1, true) FROM b",
    [`${waitMs}ms`],
  );
  try {
    await lockTemporalSchedule(db, temporalId);
  } catch (err) {
    if ((err as { code?: unknown }).code === '55P03') return false;
    throw err;
  }
  await db.query("SELECT set_config('lock_timeout', $1, true)", [rows[0]?.before ?? '0']);
  return true;
}

/** The schedule row whose Temporal Schedule is `temporalId`, locked (FOR UPDATE); undefined when there is none. */
export async function lockScheduleByTemporalId(db: Queryable, temporalId: string): Promise<ScheduleRow | undefined> {
  const { rows } = await db.query<ScheduleRow>(`${SELECT} WHERE s.temporal_id = $1 FOR UPDATE OF s`, [temporalId]);
  return rows[0];
}

/** A workflow's default schedule row, with or without a cron. */
export async function getDefaultSchedule(db: Queryable, workflow: string): Promise<ScheduleRow | undefined> {
  const { rows } = await db.query<ScheduleRow>(`${SELECT} WHERE s.workflow = $1 AND s.is_default`, [workflow]);
  return rows[0];
}

/** Every schedule, or those of one workflow: by workflow, oldest first. */
export async function listSchedules(db: Queryable, workflow?: string): Promise<ScheduleRow[]> {
  const { rows } = await db.query<ScheduleRow>(
    `${SELECT} WHERE ($1::text IS NULL OR s.workflow = $1) AND ${IS_SCHEDULE} ORDER BY s.workflow, s.is_default DESC, s.created_at, s.id`,
    [workflow ?? null],
  );
  return rows;
}

/** The Temporal ids of the schedules of these workflows (to delete them with the workflows). */
export async function temporalIdsOf(db: Queryable, workflows: string[]): Promise<string[]> {
  if (!workflows.length) return [];
  const { rows } = await db.query<{ temporal_id: string }>(
    `SELECT s.temporal_id FROM scheduler_schedules s WHERE s.workflow = ANY($1::text[]) AND ${IS_SCHEDULE}`,
    [workflows],
  );
  return rows.map((r) => r.temporal_id);
}

/**
 * The same, with every schedule row of the workflows locked (FOR UPDATE) until the transaction ends, for a deletion
 * holding the workflows' rows: a change whose row write (a PATCH giving a default row its first cron, after creating
 * its Temporal Schedule) committed first is listed; one writing after it finds the row gone, and deletes the Temporal
 * Schedule it made (api/scheduler/schedules.ts). A default row without a cron is locked too but not listed.
 */
export async function lockTemporalIdsOf(db: Queryable, workflows: string[]): Promise<string[]> {
  if (!workflows.length) return [];
  const { rows } = await db.query<{ temporal_id: string; listed: boolean }>(
    `SELECT s.temporal_id, ${IS_SCHEDULE} AS listed FROM scheduler_schedules s WHERE s.workflow = ANY($1::text[]) ORDER BY s.id FOR UPDATE OF s`,
    [workflows],
  );
  return rows.filter((r) => r.listed).map((r) => r.temporal_id);
}

/** Changes a schedule (undefined keeps a field; `input: null` removes the input); false when the row is gone. */
export async function updateSchedule(
  db: Queryable,
  id: string,
  patch: { cron?: string; at?: string; runAt?: Date; timezone?: string; jitterMs?: number; enabled?: boolean; input?: unknown },
): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE scheduler_schedules
        SET cron = COALESCE($2, cron), at = COALESCE($3, at), run_at = COALESCE($4, run_at), timezone = COALESCE($5, timezone),
            jitter_ms = COALESCE($6, jitter_ms), enabled = COALESCE($7, enabled),
            input = CASE WHEN $8 THEN $9::jsonb ELSE input END, updated_at = now()
      WHERE id = $1`,
    [
      id,
      patch.cron ?? null,
      patch.at ?? null,
      patch.runAt ?? null,
      patch.timezone ?? null,
      patch.jitterMs ?? null,
      patch.enabled ?? null,
      patch.input !== undefined,
      jsonOrNull(patch.input),
    ],
  );
  return (rowCount ?? 0) > 0;
}

/**
 * Deletes a schedule. The default row stays (it holds the workflow's zone and `enabled`) with its cron cleared, so
 * the workflow has no default schedule until one is set again.
 */
export async function deleteScheduleRow(db: Queryable, id: string): Promise<void> {
  await db.query(`UPDATE scheduler_schedules SET cron = NULL, input = NULL, updated_at = now() WHERE id = $1 AND is_default`, [id]);
  await db.query('DELETE FROM scheduler_schedules WHERE id = $1 AND NOT is_default', [id]);
}

/** A one-time schedule's run started: it is complete from now on. Idempotent (the first time wins). */
export async function markScheduleRan(db: Queryable, id: string, at: string): Promise<void> {
  await db.query(`UPDATE scheduler_schedules SET ran_at = $2 WHERE id = $1 AND type = 'one-time' AND ran_at IS NULL`, [id, at]);
}
