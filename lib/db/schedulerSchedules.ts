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
 * A schedule row (a default row with or without a cron), locked FOR UPDATE until the transaction ends: a change is
 * computed from this read, so concurrent changes apply one after the other, each to the committed row.
 */
export async function lockSchedule(db: Queryable, id: string): Promise<ScheduleRow | undefined> {
  const { rows } = await db.query<ScheduleRow>(`${SELECT} WHERE s.id = $1 FOR UPDATE OF s`, [id]);
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
 * holding the workflows' rows: a change holding a schedule row (a PATCH giving a default row its first cron, which
 * creates its Temporal Schedule) commits first and is listed; one after it finds the row gone. A default row without a
 * cron is locked too (it may be getting one) but not listed.
 */
export async function lockTemporalIdsOf(db: Queryable, workflows: string[]): Promise<string[]> {
  if (!workflows.length) return [];
  const { rows } = await db.query<{ temporal_id: string; listed: boolean }>(
    `SELECT s.temporal_id, ${IS_SCHEDULE} AS listed FROM scheduler_schedules s WHERE s.workflow = ANY($1::text[]) ORDER BY s.id FOR UPDATE OF s`,
    [workflows],
  );
  return rows.filter((r) => r.listed).map((r) => r.temporal_id);
}

/** Changes a schedule (undefined keeps a field; `input: null` removes the input). */
export async function updateSchedule(
  db: Queryable,
  id: string,
  patch: { cron?: string; at?: string; runAt?: Date; timezone?: string; jitterMs?: number; enabled?: boolean; input?: unknown },
): Promise<void> {
  await db.query(
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
