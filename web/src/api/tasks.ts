/** Task queries and mutations of the board, and the live patching of their cache from /ws/events. */
import { type QueryClient, useQuery, useQueryClient } from '@tanstack/react-query';
import { useRef, useState } from 'react';
import { api, apiPage } from './client';
import { queryKeys } from './queryKeys';
import type { Task, TaskPriority, TaskStatus } from './types';
import { eventStreamResume } from './streams';
import { useWebSocketStream } from './useStream';

const PAGE = 100; // the API's largest page

/** Every task of a project: the first page says how many there are, the rest are fetched in parallel. */
export async function fetchProjectTasks(projectId: string, signal?: AbortSignal): Promise<Task[]> {
  const path = `/projects/${encodeURIComponent(projectId)}/tasks`;
  const first = await apiPage<Task>(path, { query: { limit: PAGE, page: 1, sort: '-createdAt' }, signal });
  const pages = first.pagination.pages;
  const rest = await Promise.all(
    Array.from({ length: Math.max(0, pages - 1) }, (_, i) => apiPage<Task>(path, { query: { limit: PAGE, page: i + 2, sort: '-createdAt' }, signal })),
  );
  const seen = new Set<string>();
  const out: Task[] = [];
  for (const t of [first, ...rest].flatMap((p) => p.data)) {
    if (!seen.has(t.id)) {
      seen.add(t.id);
      out.push(t);
    }
  }
  return out;
}

/** The project's tasks; `enabled` false holds the first load back until the live stream is open (see below). */
export function useProjectTasks(projectId: string, enabled = true) {
  return useQuery({
    queryKey: queryKeys.projectTasks(projectId),
    queryFn: ({ signal }) => fetchProjectTasks(projectId, signal),
    enabled,
    meta: { inlineError: true },
  });
}

/** Replaces (or adds, at the top) tasks in a project's cached list. */
export function upsertTasks(qc: QueryClient, projectId: string, tasks: Task[]): void {
  qc.setQueryData<Task[]>(queryKeys.projectTasks(projectId), (old) => {
    if (!old) return old;
    const byId = new Map(tasks.map((t) => [t.id, t]));
    const next = old.map((t) => {
      const u = byId.get(t.id);
      if (!u) return t;
      byId.delete(t.id);
      return { ...t, ...u };
    });
    return [...byId.values(), ...next];
  });
}

export function removeTasks(qc: QueryClient, projectId: string, ids: string[]): void {
  const gone = new Set(ids);
  qc.setQueryData<Task[]>(queryKeys.projectTasks(projectId), (old) => old?.filter((t) => !gone.has(t.id)));
}

export interface TaskFields {
  title?: string;
  description?: string;
  status?: TaskStatus;
  priority?: TaskPriority;
  labels?: string[];
  assignee?: string | null;
}

export const createTask = (projectId: string, fields: TaskFields) => api<Task>('/tasks', { method: 'POST', body: { projectId, ...fields } });
export const patchTask = (id: string, fields: TaskFields) => api<Task>(`/tasks/${encodeURIComponent(id)}`, { method: 'PATCH', body: fields });
export const getTask = (id: string) => api<Task>(`/tasks/${encodeURIComponent(id)}`);

/** The bulk routes take 100 ids at a time. */
function chunks<T>(items: T[], size = 100): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

export async function bulkUpdateTasks(ids: string[], updates: TaskFields): Promise<Task[]> {
  const results = await Promise.all(chunks(ids).map((taskIds) => api<{ tasks?: Task[] }>('/tasks/bulk/update', { method: 'POST', body: { taskIds, updates } })));
  return results.flatMap((r) => r.tasks ?? []);
}

export async function bulkDeleteTasks(ids: string[]): Promise<void> {
  await Promise.all(chunks(ids).map((taskIds) => api('/tasks/bulk/delete', { method: 'POST', body: { taskIds } })));
}

export interface DomainEvent {
  seq: number;
  type: string;
  topics: string[];
  data: Record<string, unknown>;
  createdAt: string;
  /** Where the stream resumes after this message (api/task/eventStream.ts). */
  cursor?: string;
}

/**
 * Keeps a project's cached task list live: task.created adds the task (at once from the event, then completed with
 * the task itself), task.status_changed moves it, task.updated refreshes it, task.deleted removes it. Resumes from the last message's cursor on reconnect (/ws/events?after=);
 * when the server resets that cursor (stream.ready with reset), the list is reloaded.
 * Returns whether the list may load: once the stream is open (or failed once), so no task created between the
 * list's read and the subscription is missed. A list loaded while the stream was down is reloaded when it opens.
 */
export function useProjectTaskEvents(projectId: string): boolean {
  const qc = useQueryClient();
  // both keyed by project: another board starts over
  const [readyFor, setReadyFor] = useState<string | null>(null);
  const openedFor = useRef<string | null>(null);
  useWebSocketStream<DomainEvent>(`/ws/events?topics=${encodeURIComponent(`project:${projectId}`)}`, {
    ...eventStreamResume<DomainEvent>(),
    onOpen: () => {
      if (openedFor.current !== projectId) {
        openedFor.current = projectId;
        if (qc.getQueryData(queryKeys.projectTasks(projectId))) void qc.invalidateQueries({ queryKey: queryKeys.projectTasks(projectId), exact: true });
      }
      setReadyFor(projectId);
    },
    onLost: () => setReadyFor(projectId),
    // the server's events are another history (a backup restored): the list held may be wrong in any way
    onReset: () => void qc.invalidateQueries({ queryKey: queryKeys.projectTasks(projectId), exact: true }),
    onMessage: (e) => {
      const taskId = e.data.taskId as string | undefined;
      if (!taskId) return;
      if (e.type === 'task.created') {
        const cached = qc.getQueryData<Task[]>(queryKeys.projectTasks(projectId));
        if (cached?.some((t) => t.id === taskId)) return;
        const stub: Task = {
          id: taskId,
          projectId,
          title: String(e.data.title ?? ''),
          description: '',
          status: (e.data.status as TaskStatus) ?? 'pending',
          priority: (e.data.priority as TaskPriority) ?? 'medium',
          labels: [],
          assignee: null,
          createdBy: '',
          createdAt: e.createdAt,
          updatedAt: e.createdAt,
          completedAt: null,
          metadata: {},
        };
        upsertTasks(qc, projectId, [stub]);
        getTask(taskId).then(
          (t) => upsertTasks(qc, projectId, [t]),
          () => undefined, // deleted meanwhile: its own event (or the next load) settles it
        );
      } else if (e.type === 'task.status_changed') {
        upsertTasks(qc, projectId, [{ id: taskId, status: e.data.status as TaskStatus } as Task]);
      } else if (e.type === 'task.updated') {
        // an edit made anywhere (title, labels, assignee…): the task as it is now replaces the card
        if (!qc.getQueryData<Task[]>(queryKeys.projectTasks(projectId))?.some((t) => t.id === taskId)) return;
        getTask(taskId).then(
          (t) => upsertTasks(qc, projectId, [t]),
          () => undefined, // deleted meanwhile: task.deleted removes it
        );
      } else if (e.type === 'task.deleted') {
        removeTasks(qc, projectId, [taskId]);
      }
    },
  });
  return readyFor === projectId;
}
