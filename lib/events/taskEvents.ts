/** The task events every writer of task status publishes the same way (API patches, attempt projections, PR merges). */
import type { Queryable } from '../db/pool';
import type { TaskRow } from '../db/tasks';
import { type DomainEvent, publishEvent, publishEvents } from './publish';

export function taskTopics(t: Pick<TaskRow, 'id' | 'project_id'>): string[] {
  return [`task:${t.id}`, `project:${t.project_id}`];
}

export async function publishTaskCreated(db: Queryable, t: TaskRow): Promise<void> {
  await publishEvent(db, {
    type: 'task.created',
    topics: taskTopics(t),
    data: { taskId: t.id, projectId: t.project_id, title: t.title, status: t.status, priority: t.priority },
  });
}

/**
 * `task.updated` for every PATCH of a task (title, description, priority, labels, assignee, metadata or status), so
 * an open board shows edits made elsewhere; `fields` names what the request set. Not a webhook event.
 */
export async function publishTaskUpdated(db: Queryable, t: TaskRow, fields: string[]): Promise<void> {
  await publishEvent(db, {
    type: 'task.updated',
    topics: taskTopics(t),
    data: { taskId: t.id, projectId: t.project_id, fields, timestamp: t.updated_at.toISOString() },
  });
}

/** `task.deleted` when a task is deleted (its attempts and logs go with it). Not a webhook event. */
export async function publishTaskDeleted(db: Queryable, t: { id: string; project_id: string }): Promise<void> {
  await publishEvent(db, { type: 'task.deleted', topics: taskTopics(t), data: { taskId: t.id, projectId: t.project_id } });
}

/**
 * `task.status_changed` for every change, plus `task.completed` / `task.failed` / `task.cancelled` when the task
 * reached that state (the outbound webhook events). Call inside the transaction that changed the status.
 */
export async function publishTaskStatusChanged(db: Queryable, t: TaskRow, previous: string): Promise<void> {
  if (t.status === previous) return;
  const data = { taskId: t.id, projectId: t.project_id, status: t.status, previousStatus: previous, timestamp: t.updated_at.toISOString() };
  const events: DomainEvent[] = [{ type: 'task.status_changed', topics: taskTopics(t), data }];
  if (t.status === 'completed' || t.status === 'failed' || t.status === 'cancelled') {
    const duration = t.completed_at ? (t.completed_at.getTime() - t.created_at.getTime()) / 1000 : undefined;
    events.push({ type: `task.${t.status}`, topics: taskTopics(t), data: { ...data, duration } });
  }
  await publishEvents(db, events); // one round trip
}
