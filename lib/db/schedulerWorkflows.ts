/**
 * SQL for scheduler_workflows and scheduler_workflow_sources (service B). A workflow row carries its default schedule's
 * fields (`schedule`, `timezone`, `jitter_ms`, `enabled`), joined from scheduler_schedules (lib/db/schedulerSchedules.ts).
 */
import type { Queryable } from './pool';
import { jsonParam } from './storableText';
import type { RunSource } from './schedulerSources';

export interface ScriptTask {
  name: string;
  type: 'script';
  script: string;
  /** seconds */
  timeout?: number;
}

export interface FlowTask {
  name: string;
  type: 'flow';
  /** the source's id (resolved from an id or a name at creation) */
  source: string;
  /** the flow's id on the platform, resolved at creation from an id, endpoint_name or name (older rows: as written) */
  flow: string;
  /** the flow's display name when it was resolved */
  flowName?: string;
  input?: unknown;
  timeout?: number;
}

export type WorkflowTask = ScriptTask | FlowTask;

export interface WorkflowRow {
  /** immutable: a workflow deleted and created again under its name has another id (its executions are keyed by it) */
  id: string;
  name: string;
  description: string;
  /** the default schedule's row id */
  default_schedule_id: string;
  schedule: string | null;
  timezone: string;
  jitter_ms: number;
  enabled: boolean;
  tasks: WorkflowTask[];
  created_at: Date;
  updated_at: Date;
}

export interface WorkflowWithLastRun extends WorkflowRow {
  last_run: Date | null;
}

/** Inserts the workflow and its default schedule row (its cron may be null: no schedule yet). */
export async function insertWorkflow(
  db: Queryable,
  w: {
    name: string;
    description: string;
    schedule: string | null;
    timezone: string;
    jitterMs: number;
    enabled: boolean;
    tasks: WorkflowTask[];
    defaultSchedule: { id: string; temporalId: string };
  },
): Promise<WorkflowRow> {
  await db.query('INSERT INTO scheduler_workflows (name, description, tasks) VALUES ($1, $2, $3)', [w.name, w.description, jsonParam(w.tasks)]);
  await db.query(
    `INSERT INTO scheduler_schedules (id, workflow, temporal_id, is_default, type, cron, timezone, jitter_ms, enabled)
     VALUES ($1, $2, $3, true, 'cron', $4, $5, $6, $7)`,
    [w.defaultSchedule.id, w.name, w.defaultSchedule.temporalId, w.schedule, w.timezone, w.jitterMs, w.enabled],
  );
  const sources = [...new Set(w.tasks.flatMap((t) => (t.type === 'flow' ? [t.source] : [])))];
  if (sources.length) {
    await db.query('INSERT INTO scheduler_workflow_sources (workflow, source_id) SELECT $1, unnest($2::uuid[])', [w.name, sources]);
  }
  return (await getWorkflow(db, w.name)) as WorkflowRow;
}

// The workflow with its default schedule's fields.
const WORKFLOW_SELECT = `SELECT w.*, d.id AS default_schedule_id, d.cron AS schedule, d.timezone, d.jitter_ms, d.enabled
  FROM scheduler_workflows w JOIN scheduler_schedules d ON d.workflow = w.name AND d.is_default`;

export async function getWorkflow(db: Queryable, name: string): Promise<WorkflowRow | undefined> {
  const { rows } = await db.query<WorkflowRow>(`${WORKFLOW_SELECT} WHERE w.name = $1`, [name]);
  return rows[0];
}

/** NOTIFY channel of every change to what getWorkflowForRun reads (migration 085): the worker's definition cache. */
export const SCHEDULER_DEFINITIONS_CHANNEL = 'armada_scheduler_definitions';

export type RunDefinition = WorkflowRow & { first_source: RunSource | null };

/**
 * A workflow as a run starts it, with the source of its first task when that is a flow (null otherwise, or when the
 * source is gone): one round trip before the run's request can leave.
 */
export async function getWorkflowForRun(db: Queryable, name: string): Promise<RunDefinition | undefined> {
  const { rows } = await db.query<RunDefinition>(
    `SELECT x.*, (SELECT json_build_object('id', s.id, 'name', s.name, 'source_type', s.source_type, 'url', s.url, 'api_key_sealed', s.api_key_sealed, 'status', s.status)
                    FROM scheduler_sources s WHERE x.tasks->0->>'type' = 'flow' AND s.id::text = x.tasks->0->>'source') AS first_source
       FROM (${WORKFLOW_SELECT} WHERE w.name = $1) x`,
    [name],
  );
  return rows[0];
}

export async function listWorkflows(db: Queryable): Promise<WorkflowWithLastRun[]> {
  const { rows } = await db.query<WorkflowWithLastRun>(
    `SELECT x.*, (SELECT max(e.started_at) FROM scheduler_executions e WHERE e.workflow = x.name) AS last_run
       FROM (${WORKFLOW_SELECT}) x ORDER BY x.name`,
  );
  return rows;
}

/** Changes the workflow's default schedule (undefined keeps a field). */
export async function updateWorkflowSchedule(
  db: Queryable,
  name: string,
  patch: { schedule?: string; timezone?: string; jitterMs?: number; enabled?: boolean },
): Promise<WorkflowRow | undefined> {
  await db.query(
    `UPDATE scheduler_schedules
        SET cron = COALESCE($2, cron), timezone = COALESCE($3, timezone), jitter_ms = COALESCE($4, jitter_ms),
            enabled = COALESCE($5, enabled), updated_at = now()
      WHERE workflow = $1 AND is_default`,
    [name, patch.schedule ?? null, patch.timezone ?? null, patch.jitterMs ?? null, patch.enabled ?? null],
  );
  return getWorkflow(db, name);
}

/**
 * Locks these workflows' rows until the transaction ends (FOR UPDATE); the names of those that exist. An execution row
 * needs its workflow's row (a key-share lock of its foreign key), so a run cannot be added to a locked workflow, and
 * once the workflow is deleted it cannot be added at all: what a deletion lists after this is every run it takes.
 */
export async function lockWorkflows(db: Queryable, names: string[]): Promise<string[]> {
  if (!names.length) return [];
  const { rows } = await db.query<{ name: string }>('SELECT name FROM scheduler_workflows WHERE name = ANY($1::text[]) ORDER BY name FOR UPDATE', [names]);
  return rows.map((r) => r.name);
}

export async function deleteWorkflow(db: Queryable, name: string): Promise<boolean> {
  const { rowCount } = await db.query('DELETE FROM scheduler_workflows WHERE name = $1', [name]);
  return (rowCount ?? 0) > 0;
}
