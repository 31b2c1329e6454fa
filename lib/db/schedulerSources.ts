/** SQL for scheduler_sources (service B). The platform key is only ever stored sealed (lib/secretBox.ts). */
import type { Queryable } from './pool';
import { jsonParam } from './storableText';
import { runningRunsOf, type RunningRun } from './schedulerExecutions';
import { lockTemporalIdsOf } from './schedulerSchedules';
import { lockWorkflows } from './schedulerWorkflows';

export type SourceType = 'flow-builder' | 'langflow' | 'automagik-hive' | 'automagik-agents';
export type SourceStatus = 'active' | 'inactive';

export interface SourceRow {
  id: string;
  name: string;
  source_type: SourceType;
  url: string;
  api_key_sealed: string | null;
  status: SourceStatus;
  status_reason: 'user' | 'health';
  version_info: Record<string, unknown> | null;
  last_health_at: Date | null;
  last_health_ok: boolean | null;
  last_health_error: string | null;
  created_at: Date;
  updated_at: Date;
}

/** What running a flow needs of its source (sourceTarget, the inactive check, the log line). */
export type RunSource = Pick<SourceRow, 'id' | 'name' | 'source_type' | 'url' | 'api_key_sealed' | 'status'>;

export interface NewSource {
  id: string;
  name: string;
  sourceType: SourceType;
  url: string;
  apiKeySealed: string | null;
  versionInfo: Record<string, unknown> | null;
}

export async function insertSource(db: Queryable, s: NewSource): Promise<SourceRow> {
  const { rows } = await db.query<SourceRow>(
    `INSERT INTO scheduler_sources (id, name, source_type, url, api_key_sealed, version_info, last_health_at, last_health_ok)
     VALUES ($1, $2, $3, $4, $5, $6, now(), true) RETURNING *`,
    [s.id, s.name, s.sourceType, s.url, s.apiKeySealed, s.versionInfo === null ? null : jsonParam(s.versionInfo)],
  );
  return rows[0] as SourceRow;
}

export async function getSource(db: Queryable, id: string): Promise<SourceRow | undefined> {
  const { rows } = await db.query<SourceRow>('SELECT * FROM scheduler_sources WHERE id = $1', [id]);
  return rows[0];
}

/** Every source of that name, oldest first: names are not unique (a PATCH may give a source another's name). */
export async function getSourcesByName(db: Queryable, name: string): Promise<SourceRow[]> {
  const { rows } = await db.query<SourceRow>('SELECT * FROM scheduler_sources WHERE name = $1 ORDER BY created_at, id', [name]);
  return rows;
}

export async function getSourceByUrl(db: Queryable, url: string): Promise<SourceRow | undefined> {
  const { rows } = await db.query<SourceRow>('SELECT * FROM scheduler_sources WHERE md5(url) = md5($1) AND url = $1', [url]);
  return rows[0];
}

/**
 * The source whose URL is `canonical` once put in canonical form by `canonicalOf`: one stored so (every source
 * created or given a url since session 53), else one stored before in another form (`http://LOCALHOST:8080`), found
 * by reading every source's url: sources are few, and no SQL expression is the WHATWG URL parser.
 */
export async function findSourceByCanonicalUrl(db: Queryable, canonical: string, canonicalOf: (url: string) => string): Promise<SourceRow | undefined> {
  const stored = await getSourceByUrl(db, canonical);
  if (stored) return stored;
  const { rows } = await db.query<{ id: string; url: string }>('SELECT id, url FROM scheduler_sources ORDER BY created_at, id');
  const older = rows.find((r) => r.url !== canonical && canonicalOf(r.url) === canonical);
  return older ? getSource(db, older.id) : undefined;
}

/** A flow task of a workflow, on one source: the flow's id it runs (and the display name it had when resolved). */
export interface SourceFlowTask {
  workflow: string;
  task: string;
  flow: string;
  flow_name: string | null;
}

/** Every flow task on the source, by workflow name and then in the workflow's order. */
export async function flowTasksOfSource(db: Queryable, id: string): Promise<SourceFlowTask[]> {
  const { rows } = await db.query<SourceFlowTask>(
    `SELECT w.name AS workflow, t.task->>'name' AS task, t.task->>'flow' AS flow, t.task->>'flowName' AS flow_name
       FROM scheduler_workflow_sources ws
       JOIN scheduler_workflows w ON w.name = ws.workflow
      CROSS JOIN LATERAL jsonb_array_elements(w.tasks) WITH ORDINALITY AS t(task, n)
      WHERE ws.source_id = $1 AND t.task->>'type' = 'flow' AND t.task->>'source' = ws.source_id::text
      ORDER BY w.name, t.n`,
    [id],
  );
  return rows;
}

export async function listSources(
  db: Queryable,
  filter: { status?: SourceStatus },
  limit: number,
  offset: number,
): Promise<{ rows: SourceRow[]; total: number }> {
  const status = filter.status ?? null;
  const [list, count] = await Promise.all([
    db.query<SourceRow>(
      'SELECT * FROM scheduler_sources WHERE ($1::text IS NULL OR status = $1) ORDER BY created_at DESC, id DESC LIMIT $2 OFFSET $3',
      [status, limit, offset],
    ),
    db.query<{ n: number }>('SELECT count(*)::int AS n FROM scheduler_sources WHERE ($1::text IS NULL OR status = $1)', [status]),
  ]);
  return { rows: list.rows, total: count.rows[0]?.n ?? 0 };
}

/** Every source, for the periodic health check. */
export async function allSources(db: Queryable): Promise<SourceRow[]> {
  const { rows } = await db.query<SourceRow>('SELECT * FROM scheduler_sources ORDER BY created_at');
  return rows;
}

export interface SourcePatch {
  name?: string;
  sourceType?: SourceType;
  url?: string;
  /** null clears the key */
  apiKeySealed?: string | null;
  status?: SourceStatus;
  versionInfo?: Record<string, unknown> | null;
  /**
   * The platform (its new url, type or key) passed validation, which includes its health check: recorded as a passing
   * check, so a source the health check turned inactive is active again (unless `status` is given).
   */
  validated?: boolean;
}

export async function updateSource(db: Queryable, id: string, patch: SourcePatch): Promise<SourceRow | undefined> {
  const sets: string[] = [];
  const values: unknown[] = [id];
  const set = (column: string, value: unknown) => {
    values.push(value);
    sets.push(`${column} = $${values.length}`);
  };
  if (patch.name !== undefined) set('name', patch.name);
  if (patch.sourceType !== undefined) set('source_type', patch.sourceType);
  if (patch.url !== undefined) set('url', patch.url);
  if (patch.apiKeySealed !== undefined) set('api_key_sealed', patch.apiKeySealed);
  if (patch.versionInfo !== undefined) set('version_info', patch.versionInfo === null ? null : jsonParam(patch.versionInfo));
  if (patch.status !== undefined) {
    set('status', patch.status);
    sets.push(`status_reason = 'user'`);
  }
  if (patch.validated) {
    // until session 53 the row kept the old platform's failed check: inactive, and every flow task on it failing,
    // until the next periodic check (never, with that check off)
    sets.push('last_health_at = now()', 'last_health_ok = true', 'last_health_error = NULL');
    if (patch.status === undefined) sets.push(`status = CASE WHEN status = 'inactive' AND status_reason = 'health' THEN 'active' ELSE status END`);
  }
  sets.push('updated_at = now()');
  const { rows } = await db.query<SourceRow>(`UPDATE scheduler_sources SET ${sets.join(', ')} WHERE id = $1 RETURNING *`, values);
  return rows[0];
}

/**
 * Records a health check. A failing check turns an active source inactive (reason `health`); a passing check
 * reactivates only a source the health check itself deactivated, never one the user switched off.
 * `checked` is the platform the check asked (the row's url, type and sealed key as it read them): when the row names
 * another by now (a PATCH during the check), the result is of a platform the source no longer is and is not recorded
 * (undefined, as for a source deleted meanwhile). Until session 53 the old URL's failed check, landing after a PATCH
 * to a working platform, turned the source inactive.
 */
export async function recordSourceHealth(
  db: Queryable,
  id: string,
  ok: boolean,
  error: string | null,
  checked: Pick<SourceRow, 'url' | 'source_type' | 'api_key_sealed'>,
): Promise<SourceRow | undefined> {
  const { rows } = await db.query<SourceRow>(
    `UPDATE scheduler_sources
        SET last_health_at = now(), last_health_ok = $2, last_health_error = $3,
            status = CASE WHEN NOT $2 AND status = 'active' THEN 'inactive'
                          WHEN $2 AND status = 'inactive' AND status_reason = 'health' THEN 'active'
                          ELSE status END,
            status_reason = CASE WHEN NOT $2 AND status = 'active' THEN 'health' ELSE status_reason END,
            updated_at = CASE WHEN (NOT $2 AND status = 'active') OR ($2 AND status = 'inactive' AND status_reason = 'health')
                              THEN now() ELSE updated_at END
      WHERE id = $1 AND url = $4 AND source_type = $5 AND api_key_sealed IS NOT DISTINCT FROM $6 RETURNING *`,
    [id, ok, error, checked.url, checked.source_type, checked.api_key_sealed],
  );
  return rows[0];
}

/** What names a source's platform (a change of any but the name is validated again: PATCH /sources/{id}). */
export type SourcePlatformRow = Pick<SourceRow, 'id' | 'name' | 'source_type' | 'url' | 'api_key_sealed'>;

/** Whether two reads of a source name the same platform: its type, url and key (as sealed) unchanged. */
export const samePlatform = (a: SourcePlatformRow, b: SourcePlatformRow): boolean =>
  a.source_type === b.source_type && a.url === b.url && a.api_key_sealed === b.api_key_sealed;

/**
 * Key-share locks the sources until the transaction ends, so a delete of one (deleteSourceCascade) and a PATCH that
 * changes its platform (lockSourceForChange) wait for it and then find the workflow written meanwhile; returns the
 * sources found, as they are now (one changed by a PATCH that came first is read as that PATCH left it).
 */
export async function lockSources(db: Queryable, ids: string[]): Promise<Map<string, SourcePlatformRow>> {
  if (!ids.length) return new Map();
  const { rows } = await db.query<SourcePlatformRow>(
    'SELECT id, name, source_type, url, api_key_sealed FROM scheduler_sources WHERE id = ANY($1::uuid[]) ORDER BY id FOR KEY SHARE',
    [ids],
  );
  return new Map(rows.map((r) => [r.id, r]));
}

/** lockSources, returning the ids of the sources that do not exist (any more). */
export async function lockSourceKeys(db: Queryable, ids: string[]): Promise<string[]> {
  const found = await lockSources(db, ids);
  return ids.filter((id) => !found.has(id));
}

/**
 * Locks the source's row for a change of its platform (FOR UPDATE, which waits for every workflow being created on it:
 * lockSources); false when it is gone. Its flow tasks read after it are all there will be until the change commits.
 */
export async function lockSourceForChange(db: Queryable, id: string): Promise<boolean> {
  const { rowCount } = await db.query('SELECT 1 FROM scheduler_sources WHERE id = $1 FOR UPDATE', [id]);
  return (rowCount ?? 0) > 0;
}

/**
 * Deletes the source and the workflows whose flow tasks use it; returns those workflows' names, the Temporal ids of
 * their schedules and those of their running executions (to delete and stop those after the commit).
 */
export async function deleteSourceCascade(
  db: Queryable,
  id: string,
): Promise<{ deleted: boolean; workflows: string[]; temporalIds: string[]; runningRuns: RunningRun[] }> {
  // first: a workflow being created with this source (lockSourceKeys) commits before this reads the linked ones
  await db.query('SELECT 1 FROM scheduler_sources WHERE id = $1 FOR UPDATE', [id]);
  const linked = await db.query<{ workflow: string }>('SELECT workflow FROM scheduler_workflow_sources WHERE source_id = $1 ORDER BY workflow', [id]);
  const workflows = await lockWorkflows(db, linked.rows.map((r) => r.workflow));
  const temporalIds = await lockTemporalIdsOf(db, workflows);
  const runningRuns = await runningRunsOf(db, workflows);
  if (workflows.length) await db.query('DELETE FROM scheduler_workflows WHERE name = ANY($1::text[])', [workflows]);
  const { rowCount } = await db.query('DELETE FROM scheduler_sources WHERE id = $1', [id]);
  return { deleted: (rowCount ?? 0) > 0, workflows, temporalIds, runningRuns };
}
