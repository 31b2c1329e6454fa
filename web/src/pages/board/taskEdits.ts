/**
 * The Edit task dialog's unsaved edits: the fields changed there and not saved yet, one entry per task, kept in
 * sessionStorage (this tab only) while they are typed, as the New task dialog keeps its draft (taskDraft.ts). So
 * Escape, which closes the dialog, or a reload loses nothing: Edit brings them back over the task as it is then (a
 * field changed elsewhere meanwhile and not edited here shows its new value). Save and Cancel end them.
 */
import { TASK_PRIORITIES, type Task, type TaskPriority } from '../../api';
import type { TaskDraft } from './taskDraft';

/** The fields edited, each as typed (labels comma-separated). */
export type TaskEdits = Partial<TaskDraft>;

const storageKey = (taskId: string) => `armada.taskEdits.${taskId}`;

/** The task's fields as the dialog shows them. */
export function formOf(task: Task): TaskDraft {
  return { title: task.title, description: task.description ?? '', priority: task.priority, labels: task.labels.join(', '), assignee: task.assignee ?? '' };
}

/** The fields of `form` that differ from the task's. */
export function editsOf(task: Task, form: TaskDraft): TaskEdits {
  const before = formOf(task);
  return Object.fromEntries(Object.entries(form).filter(([k, v]) => before[k as keyof TaskDraft] !== v)) as TaskEdits;
}

/** The task's unsaved edits, or null when there are none (or what is stored is not edits). */
export function readTaskEdits(taskId: string): TaskEdits | null {
  try {
    const stored = JSON.parse(sessionStorage.getItem(storageKey(taskId)) ?? 'null') as Record<string, unknown> | null;
    if (!stored || typeof stored !== 'object') return null;
    const edits: TaskEdits = {};
    for (const k of ['title', 'description', 'labels', 'assignee'] as const) if (typeof stored[k] === 'string') edits[k] = stored[k];
    if (TASK_PRIORITIES.includes(stored.priority as TaskPriority)) edits.priority = stored.priority as TaskPriority;
    return Object.keys(edits).length ? edits : null;
  } catch {
    return null;
  }
}

/** Keeps `edits` as the task's unsaved edits; null, or no field edited, ends them. */
export function writeTaskEdits(taskId: string, edits: TaskEdits | null): void {
  try {
    if (!edits || !Object.keys(edits).length) sessionStorage.removeItem(storageKey(taskId));
    else sessionStorage.setItem(storageKey(taskId), JSON.stringify(edits));
  } catch {
    // storage refused (full, or disabled): the edits live as long as the dialog, as before
  }
}
