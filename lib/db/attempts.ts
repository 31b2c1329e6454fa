/** SQL for the attempts table (the projection of attemptWorkflow). */
import type { Queryable } from './pool';

export const ATTEMPT_STATUSES = ['created', 'running', 'completed', 'failed', 'cancelled'] as const;
export type AttemptStatus = (typeof ATTEMPT_STATUSES)[number];

export interface AttemptRow {
  id: string;
  task_id: string;
  number: number;
  llm: string;
  model: string | null;
  status: AttemptStatus;
  branch: string | null;
  base_branch: string | null;
  worktree_path: string | null;
  options: Record<string, unknown>;
  description: string;
  files_changed: number;
  files_created: number;
  files_modified: number;
  files_deleted: number;
  lines_added: number;
  lines_removed: number;
  input_tokens: string;
  output_tokens: string;
  total_cost: number;
  summary: string;
  created_at: Date;
  started_at: Date | null;
  completed_at: Date | null;
  cancelled_at: Date | null;
}

export async function listAttemptsForTask(db: Queryable, taskId: string): Promise<AttemptRow[]> {
  const { rows } = await db.query<AttemptRow>('SELECT * FROM attempts WHERE task_id = $1 ORDER BY number', [taskId]);
  return rows;
}

/** Seconds from start to end (or to now while running); null before the attempt started. */
export function attemptDurationSeconds(a: Pick<AttemptRow, 'started_at' | 'completed_at' | 'cancelled_at'>, now = new Date()): number | null {
  if (!a.started_at) return null;
  const end = a.completed_at ?? a.cancelled_at ?? now;
  return Math.max(0, (end.getTime() - a.started_at.getTime()) / 1000);
}
