/** SQL for the tasks table. Column names come from whitelists; every value is a parameter. */
import type { AttemptSummaryRow } from './attempts';
import type { Queryable } from './pool';

export const TASK_STATUSES = ['pending', 'in_progress', 'review', 'completed', 'failed', 'cancelled'] as const;
export const TASK_PRIORITIES = ['low', 'medium', 'high', 'critical'] as const;
export type TaskStatus = (typeof TASK_STATUSES)[number];
export type TaskPriority = (typeof TASK_PRIORITIES)[number];

export interface TaskRow {
  id: string;
  project_id: string;
  title: string;
  description: string;
  status: TaskStatus;
  priority: TaskPriority;
  labels: string[];
  assignee: string | null;
  created_by: string;
  metadata: Record<string, unknown>;
  created_at: Date;
  updated_at: Date;
  completed_at: Date | null;
}

export interface NewTask {
  id: string;
  projectId: string;
  title: string;
  description: string;
  priority: TaskPriority;
  labels: string[];
  assignee: string | null;
  createdBy: string;
  metadata: Record<string, unknown>;
}

/**
 * The metadata keys the task detail view sets itself (from the project and the latest attempt, as the spec has it). A
 * client's own values for them are not stored: they used to be, and every view but the detail showed them, so one
 * task read back with two different metadata. Not refused either, so a client can send the detail's metadata back.
 */
export const DERIVED_METADATA_KEYS = ['repository', 'branch', 'worktreePath'] as const;

export function storableMetadata(m: Record<string, unknown>): Record<string, unknown> {
  if (!DERIVED_METADATA_KEYS.some((k) => Object.hasOwn(m, k))) return m;
  const own = { ...m };
  for (const k of DERIVED_METADATA_KEYS) delete own[k];
  return own;
}

export async function insertTask(db: Queryable, t: NewTask): Promise<TaskRow> {
  const { rows } = await db.query<TaskRow>(
    `INSERT INTO tasks (id, project_id, title, description, priority, labels, assignee, created_by, metadata)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING *`,
    [t.id, t.projectId, t.title, t.description, t.priority, t.labels, t.assignee, t.createdBy, storableMetadata(t.metadata)],
  );
  return rows[0] as TaskRow;
}

export async function getTask(db: Queryable, id: string): Promise<TaskRow | undefined> {
  const { rows } = await db.query<TaskRow>('SELECT * FROM tasks WHERE id = $1', [id]);
  return rows[0];
}

/** Who runs a task's attempts when a start names no agent: the task's assignee, else its project's default. */
export async function getTaskAgentDefaults(db: Queryable, id: string): Promise<{ assignee: string | null; default_llm: string | null } | undefined> {
  const { rows } = await db.query<{ assignee: string | null; default_llm: string | null }>(
    'SELECT t.assignee, p.default_llm FROM tasks t JOIN projects p ON p.id = t.project_id WHERE t.id = $1',
    [id],
  );
  return rows[0];
}

export type TaskWithRepository = TaskRow & { project_repo_url: string; project_repo_branch: string };

/** What the detail view is built from: the task with its project's repository, and its attempts by number. */
export interface TaskDetailRows {
  t: TaskWithRepository;
  attempts: AttemptSummaryRow[];
}

/** Array columns of the detail statement, one per attempt field, each ordered by attempt number. */
const ATTEMPT_ARRAYS: Record<keyof AttemptSummaryRow, string> = {
  id: 'attempt_ids',
  number: 'attempt_numbers',
  llm: 'attempt_llms',
  status: 'attempt_statuses',
  branch: 'attempt_branches',
  worktree_path: 'attempt_worktree_paths',
  started_at: 'attempt_started_ats',
  completed_at: 'attempt_completed_ats',
  cancelled_at: 'attempt_cancelled_ats',
  total_cost: 'attempt_total_costs',
  files_changed: 'attempt_files_changed',
  lines_added: 'attempt_lines_added',
  lines_removed: 'attempt_lines_removed',
};
const ATTEMPT_FIELDS = Object.keys(ATTEMPT_ARRAYS) as (keyof AttemptSummaryRow)[];

/**
 * One round trip for the detail view: the task's columns, its project's repository, and its attempts as one array
 * per field (array_agg … ORDER BY number). Arrays of timestamptz, float8 and int4 go through the same pg type parsers
 * as the plain columns, so the rows equal what `SELECT *` gave (Dates, numbers), to the millisecond. Named, so each
 * connection parses and plans it once; the columns are listed, so a column added to tasks later cannot change the
 * prepared statement's result type.
 */
const TASK_DETAIL_SQL = `SELECT t.id, t.project_id, t.title, t.description, t.status, t.priority, t.labels, t.assignee, t.created_by,
       t.metadata, t.created_at, t.updated_at, t.completed_at, p.repo_url AS project_repo_url, p.repo_branch AS project_repo_branch, a.*
  FROM tasks t
  JOIN projects p ON p.id = t.project_id
 CROSS JOIN LATERAL (
   SELECT ${ATTEMPT_FIELDS.map((f) => `array_agg(${f} ORDER BY number) AS ${ATTEMPT_ARRAYS[f]}`).join(', ')}
     FROM attempts WHERE task_id = t.id) a
 WHERE t.id = $1`;

type TaskDetailRow = TaskWithRepository & { [K in keyof AttemptSummaryRow as (typeof ATTEMPT_ARRAYS)[K]]: AttemptSummaryRow[K][] | null };

export async function getTaskDetail(db: Queryable, id: string): Promise<TaskDetailRows | undefined> {
  const { rows } = await db.query<TaskDetailRow>({ name: 'task_detail', text: TASK_DETAIL_SQL, values: [id] });
  const row = rows[0];
  if (!row) return undefined;
  const columns = ATTEMPT_FIELDS.map((f) => [f, row[ATTEMPT_ARRAYS[f] as keyof TaskDetailRow] as unknown[] | null] as const);
  const count = row.attempt_ids?.length ?? 0;
  const attempts: AttemptSummaryRow[] = [];
  for (let i = 0; i < count; i++) {
    const a: Record<string, unknown> = {};
    for (const [f, values] of columns) a[f] = (values as unknown[])[i];
    attempts.push(a as unknown as AttemptSummaryRow);
  }
  const t: TaskWithRepository = {
    id: row.id,
    project_id: row.project_id,
    title: row.title,
    description: row.description,
    status: row.status,
    priority: row.priority,
    labels: row.labels,
    assignee: row.assignee,
    created_by: row.created_by,
    metadata: row.metadata,
    created_at: row.created_at,
    updated_at: row.updated_at,
    completed_at: row.completed_at,
    project_repo_url: row.project_repo_url,
    project_repo_branch: row.project_repo_branch,
  };
  return { t, attempts };
}

export interface TaskFilter {
  projectId?: string;
  status?: TaskStatus;
  priority?: TaskPriority;
  labels?: string[];
  assignee?: string;
  search?: string;
}

const SORT_COLUMNS: Record<string, string> = {
  createdAt: 'created_at',
  updatedAt: 'updated_at',
  completedAt: 'completed_at',
  priority: 'priority_rank',
  title: 'title',
  status: 'status',
};
const NULLABLE_SORT_COLUMNS = new Set(['completed_at']);
export const TASK_SORT_FIELDS = Object.keys(SORT_COLUMNS);
export const TASK_SORT_PATTERN = `^-?(${TASK_SORT_FIELDS.join('|')})$`;

function orderBy(sort: string | undefined): string {
  const s = sort ?? '-createdAt';
  const desc = s.startsWith('-');
  const column = SORT_COLUMNS[desc ? s.slice(1) : s] ?? 'created_at';
  const dir = desc ? 'DESC' : 'ASC';
  // NULLS LAST only where a column can be null: on a NOT NULL column it would stop the (col DESC, id DESC)
  // indexes from serving the ORDER BY, turning every page into a sort of the whole table.
  return `${column} ${dir}${NULLABLE_SORT_COLUMNS.has(column) ? ' NULLS LAST' : ''}, id ${dir}`;
}

function escapeLike(s: string): string {
  return s.replace(/[\\%_]/g, (c) => `\\${c}`);
}

function where(filter: TaskFilter, values: unknown[]): string {
  const clauses: string[] = [];
  const add = (sql: (p: string) => string, v: unknown): void => {
    values.push(v);
    clauses.push(sql(`$${values.length}`));
  };
  if (filter.projectId !== undefined) add((p) => `project_id = ${p}`, filter.projectId);
  if (filter.status !== undefined) add((p) => `status = ${p}`, filter.status);
  if (filter.priority !== undefined) add((p) => `priority = ${p}`, filter.priority);
  if (filter.labels && filter.labels.length > 0) add((p) => `labels @> ${p}::text[]`, filter.labels);
  if (filter.assignee !== undefined) add((p) => `assignee = ${p}`, filter.assignee);
  if (filter.search) {
    // the term in its composed and decomposed Unicode forms (NFC, NFD): a title typed with a decomposed é (macOS input,
    // text pasted from a file name) was not found by a composed one, nor the reverse (session 50's outside round)
    const forms = [...new Set([filter.search.normalize('NFC'), filter.search.normalize('NFD')])];
    const matches = forms.map((form) => {
      values.push(`%${escapeLike(form)}%`);
      return `title ILIKE $${values.length} OR description ILIKE $${values.length}`;
    });
    clauses.push(`(${matches.join(' OR ')})`);
  }
  return clauses.length ? `WHERE ${clauses.join(' AND ')}` : '';
}

/** True when only project and status filter the list: its count then comes from the trigger-kept task_counts. */
function countedByCounters(filter: TaskFilter): boolean {
  const { projectId: _p, status: _s, ...rest } = filter;
  return Object.values(rest).every((v) => v === undefined || (Array.isArray(v) && v.length === 0) || v === '');
}

/**
 * A named prepared statement per distinct SQL text: PostgreSQL parses and plans it once per connection, and each
 * execution sends only Bind/Execute. The texts are built from whitelists, so their number is small and bounded.
 */
const statementNames = new Map<string, string>();
function prepared(text: string, values: unknown[]): { name: string; text: string; values: unknown[] } {
  let name = statementNames.get(text);
  if (!name) {
    name = `tasks_${statementNames.size + 1}`;
    statementNames.set(text, name);
  }
  return { name, text, values };
}

/** A task as the API shows it, built by PostgreSQL (ISO 8601 UTC timestamps with milliseconds, like toISOString). */
const ISO = (col: string) => `to_char(${col} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;
const TASK_JSON = `json_build_object(
  'id', t.id, 'projectId', t.project_id, 'title', t.title, 'description', t.description, 'status', t.status,
  'priority', t.priority, 'labels', t.labels, 'assignee', t.assignee, 'createdBy', t.created_by,
  'createdAt', ${ISO('t.created_at')}, 'updatedAt', ${ISO('t.updated_at')}, 'completedAt', ${ISO('t.completed_at')},
  'metadata', t.metadata)`;

/**
 * One page of tasks, already serialised as the API's JSON array, and the total. PostgreSQL builds the JSON (no
 * per-column row parsing in Node: the list is the hottest read; the page's text is compacted once). Filters on
 * project and status alone (the common pages) take one round trip, the total coming from task_counts; other
 * filters count the (narrower) matching rows alongside.
 */
export async function listTasksJson(
  db: Queryable,
  filter: TaskFilter,
  page: { limit: number; offset: number; sort?: string },
): Promise<{ json: string; total: number }> {
  const values: unknown[] = [];
  const w = where(filter, values);
  values.push(page.limit, page.offset);
  const order = orderBy(page.sort);
  const pageSql = `SELECT * FROM tasks ${w} ORDER BY ${order} LIMIT $${values.length - 1} OFFSET $${values.length}`;
  const aggregate = `COALESCE(json_agg(${TASK_JSON} ORDER BY ${order.replace(/(^|, )(\w+)/g, '$1t.$2')}), '[]'::json)::text AS json`;
  if (countedByCounters(filter)) {
    // where() only used project_id/status here, so the same parameters filter task_counts
    const countWhere = w.replace(/\bproject_id\b/g, 'c.project_id').replace(/\bstatus\b/g, 'c.status');
    const { rows } = await db.query<{ json: string; total_count: string }>(
      prepared(
        `SELECT ${aggregate}, (SELECT COALESCE(sum(c.n), 0)::bigint FROM task_counts c ${countWhere}) AS total_count
           FROM (${pageSql}) t`,
        values,
      ),
    );
    return { json: compactJson(rows[0]?.json), total: Number(rows[0]?.total_count ?? 0) };
  }
  const countValues: unknown[] = [];
  const [list, count] = await Promise.all([
    db.query<{ json: string }>(prepared(`SELECT ${aggregate} FROM (${pageSql}) t`, values)),
    db.query<{ n: string }>(prepared(`SELECT count(*) AS n FROM tasks ${where(filter, countValues)}`, countValues)),
  ]);
  return { json: compactJson(list.rows[0]?.json), total: Number(count.rows[0]?.n ?? 0) };
}

/**
 * PostgreSQL's json_build_object/json_agg text is spaced (`{"id" : …}`, `}, \n {`) and jsonb inside it too
 * (`{"a": 1}`): one parse + stringify of the page gives the same compact form as every other response.
 */
function compactJson(json: string | undefined): string {
  return json ? JSON.stringify(JSON.parse(json)) : '[]';
}

export interface TaskPatch {
  title?: string;
  description?: string;
  status?: TaskStatus;
  priority?: TaskPriority;
  labels?: string[];
  assignee?: string | null;
  metadata?: Record<string, unknown>;
}

const PATCH_COLUMNS: Record<keyof TaskPatch, string> = {
  title: 'title',
  description: 'description',
  status: 'status',
  priority: 'priority',
  labels: 'labels',
  assignee: 'assignee',
  metadata: 'metadata',
};

export type UpdatedTaskRow = TaskRow & { previous_status: TaskStatus };

/**
 * Applies a patch to the given tasks; completedAt follows status (set on completed, cleared when it leaves).
 * Each returned row carries the status it had before (`previous_status`), for the status-change events.
 */
export async function updateTasks(db: Queryable, ids: string[], patch: TaskPatch): Promise<UpdatedTaskRow[]> {
  const values: unknown[] = [ids];
  const sets: string[] = [];
  for (const [key, column] of Object.entries(PATCH_COLUMNS) as [keyof TaskPatch, string][]) {
    if (patch[key] === undefined) continue;
    values.push(key === 'metadata' && patch.metadata ? storableMetadata(patch.metadata) : patch[key]);
    sets.push(`${column} = $${values.length}`);
    if (key === 'status') {
      sets.push(`completed_at = CASE WHEN $${values.length}::text = 'completed' THEN COALESCE(completed_at, now()) ELSE NULL END`);
    }
  }
  sets.push('updated_at = clock_timestamp()');
  const { rows } = await db.query<UpdatedTaskRow>(
    `WITH prev AS (SELECT id, status FROM tasks WHERE id = ANY($1::text[]) ORDER BY id FOR UPDATE)
     UPDATE tasks SET ${sets.join(', ')} FROM prev WHERE tasks.id = prev.id
     RETURNING tasks.*, prev.status AS previous_status`,
    values,
  );
  return rows;
}

/** Deletes the tasks; answers the ids and projects of those that existed. */
export async function deleteTasks(db: Queryable, ids: string[]): Promise<Array<{ id: string; project_id: string }>> {
  const { rows } = await db.query<{ id: string; project_id: string }>('DELETE FROM tasks WHERE id = ANY($1::text[]) RETURNING id, project_id', [ids]);
  return rows;
}
