/** SQL for task_templates. */
import type { Queryable } from './pool';
import { jsonParam } from './storableText';

export interface TemplateTask {
  title: string;
  description: string;
  order: number;
  estimatedTime?: number;
}

export interface TemplateMetadata {
  totalEstimatedTime: number;
  difficulty?: string;
  [key: string]: unknown;
}

export interface TaskTemplateRow {
  id: string;
  name: string;
  description: string;
  category: string;
  tasks: TemplateTask[];
  metadata: TemplateMetadata;
  created_at: Date;
  updated_at: Date;
}

export async function insertTemplate(
  db: Queryable,
  t: { id: string; name: string; description: string; category: string; tasks: TemplateTask[]; metadata: TemplateMetadata },
): Promise<TaskTemplateRow> {
  const { rows } = await db.query<TaskTemplateRow>(
    'INSERT INTO task_templates (id, name, description, category, tasks, metadata) VALUES ($1, $2, $3, $4, $5, $6) RETURNING *',
    [t.id, t.name, t.description, t.category, jsonParam(t.tasks), t.metadata],
  );
  return rows[0] as TaskTemplateRow;
}

/** `forUpdate` locks the row until the transaction ends: an update recomputing from it must not read a stale copy. */
export async function getTemplate(db: Queryable, id: string, forUpdate = false): Promise<TaskTemplateRow | undefined> {
  const { rows } = await db.query<TaskTemplateRow>(`SELECT * FROM task_templates WHERE id = $1${forUpdate ? ' FOR UPDATE' : ''}`, [id]);
  return rows[0];
}

/** Newest first; `search` matches the name case-insensitively, `category` exactly. */
export async function listTemplates(
  db: Queryable,
  f: { category?: string; search?: string; limit: number; offset: number },
): Promise<{ rows: TaskTemplateRow[]; total: number }> {
  // the term in its composed and decomposed Unicode forms (NFC, NFD), as the task search (lib/db/tasks.ts)
  const where = `($1::text IS NULL OR category = $1) AND ($2::text IS NULL OR name ILIKE '%' || $2 || '%' OR name ILIKE '%' || $3 || '%')`;
  const escaped = (form: string) => (f.search ? f.search.normalize(form).replace(/[\\%_]/g, (c) => `\\${c}`) : null);
  const params = [f.category ?? null, escaped('NFC'), escaped('NFD')];
  const [list, count] = await Promise.all([
    db.query<TaskTemplateRow>(`SELECT * FROM task_templates WHERE ${where} ORDER BY created_at DESC, id DESC LIMIT $4 OFFSET $5`, [...params, f.limit, f.offset]),
    db.query<{ n: string }>(`SELECT count(*) AS n FROM task_templates WHERE ${where}`, params),
  ]);
  return { rows: list.rows, total: Number(count.rows[0]?.n ?? 0) };
}

export async function updateTemplate(
  db: Queryable,
  id: string,
  p: { name?: string; description?: string; category?: string; tasks?: TemplateTask[]; metadata?: TemplateMetadata },
): Promise<TaskTemplateRow | undefined> {
  const { rows } = await db.query<TaskTemplateRow>(
    `UPDATE task_templates SET
       name = COALESCE($2, name), description = COALESCE($3, description), category = COALESCE($4, category),
       tasks = COALESCE($5::jsonb, tasks), metadata = COALESCE($6::jsonb, metadata), updated_at = now()
     WHERE id = $1 RETURNING *`,
    [id, p.name ?? null, p.description ?? null, p.category ?? null, p.tasks ? jsonParam(p.tasks) : null, p.metadata ? jsonParam(p.metadata) : null],
  );
  return rows[0];
}

export async function deleteTemplate(db: Queryable, id: string): Promise<boolean> {
  const { rowCount } = await db.query('DELETE FROM task_templates WHERE id = $1', [id]);
  return (rowCount ?? 0) > 0;
}
