/** SQL for scheduler_workflows and scheduler_workflow_sources (service B). */
import type { Queryable } from './pool';

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
  name: string;
  description: string;
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

export async function insertWorkflow(
  db: Queryable,
  w: { name: string; description: string; schedule: string | null; timezone: string; jitterMs: number; tasks: WorkflowTask[] },
): Promise<WorkflowRow> {
  const { rows } = await db.query<WorkflowRow>(
    `INSERT INTO scheduler_workflows (name, description, schedule, timezone, jitter_ms, tasks)
     VALUES ($1, $2, $3, $4, $5, $6) RETURNING *`,
    [w.name, w.description, w.schedule, w.timezone, w.jitterMs, JSON.stringify(w.tasks)],
  );
  const row = rows[0] as WorkflowRow;
  const sources = [...new Set(w.tasks.flatMap((t) => (t.type === 'flow' ? [t.source] : [])))];
  if (sources.length) {
    await db.query('INSERT INTO scheduler_workflow_sources (workflow, source_id) SELECT $1, unnest($2::uuid[])', [w.name, sources]);
  }
  return row;
}

export async function getWorkflow(db: Queryable, name: string): Promise<WorkflowRow | undefined> {
  const { rows } = await db.query<WorkflowRow>('SELECT * FROM scheduler_workflows WHERE name = $1', [name]);
  return rows[0];
}

export async function listWorkflows(db: Queryable): Promise<WorkflowWithLastRun[]> {
  const { rows } = await db.query<WorkflowWithLastRun>(
    `SELECT w.*, (SELECT max(e.started_at) FROM scheduler_executions e WHERE e.workflow = w.name) AS last_run
       FROM scheduler_workflows w ORDER BY w.name`,
  );
  return rows;
}

export async function listScheduledWorkflows(db: Queryable): Promise<WorkflowRow[]> {
  const { rows } = await db.query<WorkflowRow>('SELECT * FROM scheduler_workflows WHERE schedule IS NOT NULL ORDER BY name');
  return rows;
}

export async function updateWorkflowSchedule(
  db: Queryable,
  name: string,
  patch: { schedule?: string; timezone?: string; enabled?: boolean },
): Promise<WorkflowRow | undefined> {
  const { rows } = await db.query<WorkflowRow>(
    `UPDATE scheduler_workflows
        SET schedule = COALESCE($2, schedule), timezone = COALESCE($3, timezone), enabled = COALESCE($4, enabled), updated_at = now()
      WHERE name = $1 RETURNING *`,
    [name, patch.schedule ?? null, patch.timezone ?? null, patch.enabled ?? null],
  );
  return rows[0];
}

export async function deleteWorkflow(db: Queryable, name: string): Promise<boolean> {
  const { rowCount } = await db.query('DELETE FROM scheduler_workflows WHERE name = $1', [name]);
  return (rowCount ?? 0) > 0;
}
