/** The board's columns and which task statuses each shows; a card dropped on a column gets the column's status. */
import { TASK_PRIORITIES, type Task, type TaskPriority, type TaskStatus } from '../../api';

export interface BoardColumn {
  key: string;
  title: string;
  statuses: TaskStatus[];
  /** the status a card moved here gets */
  target: TaskStatus;
}

export const COLUMNS: BoardColumn[] = [
  { key: 'todo', title: 'To do', statuses: ['pending'], target: 'pending' },
  { key: 'in-progress', title: 'In progress', statuses: ['in_progress'], target: 'in_progress' },
  { key: 'in-review', title: 'In review', statuses: ['review'], target: 'review' },
  // a failed task is finished too: it shows here, marked failed
  { key: 'done', title: 'Done', statuses: ['completed', 'failed'], target: 'completed' },
  { key: 'cancelled', title: 'Cancelled', statuses: ['cancelled'], target: 'cancelled' },
];

export const STATUS_LABELS: Record<TaskStatus, string> = {
  pending: 'To do',
  in_progress: 'In progress',
  review: 'In review',
  completed: 'Done',
  failed: 'Failed',
  cancelled: 'Cancelled',
};

export const PRIORITY_RANK: Record<TaskPriority, number> = { critical: 0, high: 1, medium: 2, low: 3 };

/** The labels a comma-separated text names ("bug, ui"), trimmed, without empty ones. */
export function labelsOf(text: string): string[] {
  return text
    .split(',')
    .map((l) => l.trim())
    .filter(Boolean);
}

/** The board's filters, as kept in the URL query: `q`, `priority`, `assignee`, `labels` (comma-separated). */
export interface BoardFilters {
  q: string;
  priority: string;
  assignee: string;
  labels: string[];
}

/**
 * The filters of a URL query. A priority the Priority select cannot show would filter out every card while the
 * select says "Any": another letter case of a known one is taken as that one, anything else is dropped.
 */
export function filtersFrom(params: URLSearchParams): BoardFilters {
  const priority = (params.get('priority') ?? '').toLowerCase();
  return {
    q: params.get('q') ?? '',
    priority: (TASK_PRIORITIES as string[]).includes(priority) ? priority : '',
    assignee: params.get('assignee') ?? '',
    labels: labelsOf(params.get('labels') ?? ''),
  };
}

export function matches(t: Task, f: BoardFilters): boolean {
  if (f.priority && t.priority !== f.priority) return false;
  if (f.assignee && (t.assignee ?? '') !== f.assignee) return false;
  if (f.labels.length && !f.labels.every((l) => t.labels.includes(l))) return false;
  if (f.q) {
    const q = f.q.toLowerCase();
    if (!t.title.toLowerCase().includes(q) && !t.description.toLowerCase().includes(q)) return false;
  }
  return true;
}
