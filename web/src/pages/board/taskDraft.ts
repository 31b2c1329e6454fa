/**
 * The New task dialog's draft: what was typed there and not created yet, one per project, kept in sessionStorage
 * (this tab only, like the API key) while it is typed. So Escape, which closes the dialog, or a reload loses nothing:
 * New task brings it back. Create and Cancel end it (as GitLab's and vibe-kanban's new-item forms do).
 */
import { TASK_PRIORITIES, type TaskPriority } from '../../api';

export interface TaskDraft {
  title: string;
  description: string;
  priority: TaskPriority;
  /** as typed: comma-separated */
  labels: string;
  assignee: string;
}

const storageKey = (projectId: string) => `armada.taskDraft.${projectId}`;

const isBlank = (d: TaskDraft) => !d.title.trim() && !d.description.trim() && !d.labels.trim() && !d.assignee.trim() && d.priority === 'medium';

/** The project's draft, or null when there is none (or what is stored is not one). */
export function readTaskDraft(projectId: string): TaskDraft | null {
  try {
    const d = JSON.parse(sessionStorage.getItem(storageKey(projectId)) ?? 'null') as Partial<TaskDraft> | null;
    if (!d || typeof d !== 'object') return null;
    const text = (v: unknown) => (typeof v === 'string' ? v : '');
    const priority = TASK_PRIORITIES.includes(d.priority as TaskPriority) ? (d.priority as TaskPriority) : 'medium';
    const draft = { title: text(d.title), description: text(d.description), priority, labels: text(d.labels), assignee: text(d.assignee) };
    return isBlank(draft) ? null : draft;
  } catch {
    return null;
  }
}

/** Keeps `draft` as the project's draft; null, or a form with nothing typed, ends it. */
export function writeTaskDraft(projectId: string, draft: TaskDraft | null): void {
  try {
    if (!draft || isBlank(draft)) sessionStorage.removeItem(storageKey(projectId));
    else sessionStorage.setItem(storageKey(projectId), JSON.stringify(draft));
  } catch {
    // storage refused (full, or disabled): the draft lives as long as the dialog, as before
  }
}
