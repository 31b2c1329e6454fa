/** SQL for the projects table. */
import { afterInsertingTransaction, type Queryable } from './pool';

export interface ProjectRow {
  id: string;
  name: string;
  description: string;
  /** The URL as shown: credentials redacted (rows from before migration 099 may still hold them, until sealed). */
  repo_url: string;
  /** The URL's credentials, sealed (lib/projects/repoCredentials.ts); never in a response. */
  repo_credentials_sealed: string | null;
  repo_branch: string;
  git_repo_path: string | null;
  clone_status: 'ready' | 'cloning' | 'failed';
  clone_error: string | null;
  setup_script: string;
  dev_script: string;
  default_llm: string | null;
  config: Record<string, unknown>;
  last_sync: Date | null;
  created_at: Date;
  updated_at: Date;
}

export interface NewProject {
  id: string;
  name: string;
  description: string;
  repoUrl: string;
  repoCredentialsSealed: string | null;
  repoBranch: string;
  gitRepoPath: string | null;
  cloneStatus: 'ready' | 'cloning';
  setupScript: string;
  devScript: string;
  defaultLlm: string | null;
}

export const UNIQUE_VIOLATION = '23505';

export async function insertProject(db: Queryable, p: NewProject): Promise<ProjectRow> {
  const { rows } = await db.query<ProjectRow>(
    `INSERT INTO projects (id, name, description, repo_url, repo_branch, git_repo_path, clone_status, setup_script, dev_script, default_llm, last_sync, repo_credentials_sealed)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, CASE WHEN $7 = 'ready' THEN now() END, $11)
     RETURNING *`,
    [p.id, p.name, p.description, p.repoUrl, p.repoBranch, p.gitRepoPath, p.cloneStatus, p.setupScript, p.devScript, p.defaultLlm, p.repoCredentialsSealed],
  );
  return rows[0] as ProjectRow;
}

export async function getProject(db: Queryable, id: string): Promise<ProjectRow | undefined> {
  const { rows } = await db.query<ProjectRow>('SELECT * FROM projects WHERE id = $1', [id]);
  return rows[0];
}

export async function listProjects(db: Queryable, limit: number, offset: number): Promise<{ rows: ProjectRow[]; total: number }> {
  const [list, count] = await Promise.all([
    db.query<ProjectRow>('SELECT * FROM projects ORDER BY created_at DESC, id DESC LIMIT $1 OFFSET $2', [limit, offset]),
    db.query<{ n: string }>('SELECT count(*) AS n FROM projects'),
  ]);
  return { rows: list.rows, total: Number(count.rows[0]?.n ?? 0) };
}

export interface ProjectPatch {
  name?: string;
  description?: string;
  defaultLlm?: string | null;
  setupScript?: string;
  devScript?: string;
  repoBranch?: string;
}

const PATCH_COLUMNS: Record<keyof ProjectPatch, string> = {
  name: 'name',
  description: 'description',
  defaultLlm: 'default_llm',
  setupScript: 'setup_script',
  devScript: 'dev_script',
  repoBranch: 'repo_branch',
};

export async function updateProject(db: Queryable, id: string, patch: ProjectPatch): Promise<ProjectRow | undefined> {
  const sets: string[] = [];
  const values: unknown[] = [id];
  for (const [key, column] of Object.entries(PATCH_COLUMNS) as [keyof ProjectPatch, string][]) {
    if (patch[key] === undefined) continue;
    values.push(patch[key]);
    sets.push(`${column} = $${values.length}`);
  }
  sets.push('updated_at = now()');
  const { rows } = await db.query<ProjectRow>(`UPDATE projects SET ${sets.join(', ')} WHERE id = $1 RETURNING *`, values);
  return rows[0];
}

/**
 * Taken by the transaction that inserts a project to be cloned and starts its clone workflow before it commits;
 * `projectStored` takes it too, so it waits for that transaction's end before it looks.
 */
export async function lockProjectInsert(c: Queryable, id: string): Promise<void> {
  await c.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`project-create:${id}`]);
}

/**
 * Whether project `id` was stored, read once the transaction that inserted it (and started the clone workflow
 * asking) has ended, committed or rolled back (`lockProjectInsert`). Run in a transaction of its own.
 */
export async function projectStored(c: Queryable, id: string): Promise<boolean> {
  await afterInsertingTransaction(c, (q) => lockProjectInsert(q, id));
  const { rowCount } = await c.query('SELECT 1 FROM projects WHERE id = $1', [id]);
  return (rowCount ?? 0) > 0;
}

export async function deleteProject(db: Queryable, id: string): Promise<boolean> {
  const { rowCount } = await db.query('DELETE FROM projects WHERE id = $1', [id]);
  return (rowCount ?? 0) > 0;
}

/** Records a clone's outcome; false when the project no longer exists (deleted while its repository was cloned). */
export async function setCloneResult(db: Queryable, id: string, ok: boolean, path: string | null, error: string | null): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE projects SET clone_status = $2, git_repo_path = COALESCE($3, git_repo_path), clone_error = $4,
            last_sync = CASE WHEN $2 = 'ready' THEN now() ELSE last_sync END, updated_at = now()
      WHERE id = $1`,
    [id, ok ? 'ready' : 'failed', path, error],
  );
  return (rowCount ?? 0) > 0;
}

/** What git needs of a project's repository: its URL as stored, its sealed credentials, where it is. */
export type ProjectRemoteRow = Pick<ProjectRow, 'id' | 'repo_url' | 'repo_credentials_sealed' | 'git_repo_path'>;

export async function getProjectRemote(db: Queryable, id: string): Promise<ProjectRemoteRow | undefined> {
  const { rows } = await db.query<ProjectRemoteRow>('SELECT id, repo_url, repo_credentials_sealed, git_repo_path FROM projects WHERE id = $1', [id]);
  return rows[0];
}

/** Projects whose repo_url has userinfo over http(s) and nothing sealed: rows from before migration 099 (and `***`). */
export async function listUnsealedRepoUrls(db: Queryable): Promise<Pick<ProjectRow, 'id' | 'repo_url' | 'clone_error'>[]> {
  const { rows } = await db.query<Pick<ProjectRow, 'id' | 'repo_url' | 'clone_error'>>(
    `SELECT id, repo_url, clone_error FROM projects WHERE repo_credentials_sealed IS NULL AND repo_url ~* '^https?://[^/?#]*@'`,
  );
  return rows;
}

/** Replaces a row's URL as given by the URL as shown and the sealed credentials, unless another process did first. */
export async function sealRepoUrl(db: Queryable, id: string, given: string, shown: string, sealed: string, cloneError: string | null): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE projects SET repo_url = $3, repo_credentials_sealed = $4, clone_error = $5
      WHERE id = $1 AND repo_url = $2 AND repo_credentials_sealed IS NULL`,
    [id, given, shown, sealed, cloneError],
  );
  return (rowCount ?? 0) > 0;
}

/** Which of `ids` are projects that exist. */
export async function existingProjectIds(db: Queryable, ids: string[]): Promise<Set<string>> {
  if (!ids.length) return new Set();
  const { rows } = await db.query<{ id: string }>('SELECT id FROM projects WHERE id = ANY($1::text[])', [ids]);
  return new Set(rows.map((r) => r.id));
}

export interface ProjectTaskCounts {
  total: number;
  pending: number;
  inProgress: number;
  review: number;
  completed: number;
  failed: number;
  cancelled: number;
}

export async function taskCounts(db: Queryable, projectId: string): Promise<ProjectTaskCounts> {
  const { rows } = await db.query<{ status: string; n: string }>('SELECT status, n FROM task_counts WHERE project_id = $1', [projectId]);
  const by = Object.fromEntries(rows.map((r) => [r.status, Number(r.n)])) as Record<string, number>;
  const get = (s: string): number => by[s] ?? 0;
  return {
    total: rows.reduce((a, r) => a + Number(r.n), 0),
    pending: get('pending'),
    inProgress: get('in_progress'),
    review: get('review'),
    completed: get('completed'),
    failed: get('failed'),
    cancelled: get('cancelled'),
  };
}

export interface ProjectAttemptStats {
  total: number;
  successful: number;
  failed: number;
  running: number;
  totalCost: number;
  byLlm: Record<string, number>;
  averageTaskDurationSeconds: number;
}

export async function attemptStats(db: Queryable, projectId: string): Promise<ProjectAttemptStats> {
  const [byLlm, durations] = await Promise.all([
    db.query<{ llm: string; total: string; successful: string; failed: string; running: string; cost: number }>(
      `SELECT a.llm, count(*) AS total,
              count(*) FILTER (WHERE a.status = 'completed') AS successful,
              count(*) FILTER (WHERE a.status = 'failed') AS failed,
              count(*) FILTER (WHERE a.status = 'running') AS running,
              COALESCE(sum(a.total_cost), 0)::float8 AS cost
         FROM attempts a JOIN tasks t ON t.id = a.task_id
        WHERE t.project_id = $1
        GROUP BY a.llm`,
      [projectId],
    ),
    db.query<{ avg: number | null }>(
      `SELECT avg(extract(epoch FROM completed_at - created_at))::float8 AS avg
         FROM tasks WHERE project_id = $1 AND status = 'completed' AND completed_at IS NOT NULL`,
      [projectId],
    ),
  ]);
  const s: ProjectAttemptStats = { total: 0, successful: 0, failed: 0, running: 0, totalCost: 0, byLlm: {}, averageTaskDurationSeconds: 0 };
  for (const r of byLlm.rows) {
    s.total += Number(r.total);
    s.successful += Number(r.successful);
    s.failed += Number(r.failed);
    s.running += Number(r.running);
    s.totalCost += r.cost;
  }
  // own properties whatever the name: `byLlm[llm] = cost` set the prototype for an agent named __proto__ (a config
  // file may name one so), whose cost then was in totalCost and in no key of byLLM
  s.byLlm = Object.fromEntries(byLlm.rows.map((r) => [r.llm, r.cost]));
  s.averageTaskDurationSeconds = durations.rows[0]?.avg ?? 0;
  return s;
}

/** The local repository directory of every project (the filesystem endpoints allow them by default). */
export async function listProjectRepoPaths(db: Queryable): Promise<string[]> {
  const { rows } = await db.query<{ p: string }>('SELECT DISTINCT git_repo_path AS p FROM projects WHERE git_repo_path IS NOT NULL');
  return rows.map((r) => r.p);
}
