/** The scheduler service through the task service's proxy (/svc/scheduler/api/v1; docs/scheduler.md). No stream. */
import { useQuery } from '@tanstack/react-query';
import { svc } from './client';
import { queryKeys } from './queryKeys';

export interface Source {
  id: string;
  name: string;
  source_type: string;
  url: string;
  status: 'active' | 'inactive';
  has_api_key: boolean;
  version_info: Record<string, unknown> | null;
  last_health_check: string | null;
  last_health_error: string | null;
}
export interface SourceHealth {
  id: string;
  healthy: boolean;
  status: string;
  error: string | null;
  checked_at: string;
}
export interface SchedulerWorkflow {
  name: string;
  description: string;
  schedule: string | null;
  timezone: string;
  enabled: boolean;
  lastRun: string | null;
  nextRun: string | null;
  tasks: { name: string; type: string }[];
}
export interface Schedule {
  workflow: string;
  schedule: string | null;
  timezone: string;
  jitter: number;
  enabled: boolean;
  nextRun: string | null;
}
export interface Execution {
  id: string;
  workflow: string;
  status: 'running' | 'completed' | 'failed' | 'stopped';
  trigger: 'manual' | 'schedule';
  startedAt: string;
  completedAt: string | null;
  duration: string | null;
  error: string | null;
}
export interface ExecutionLogs {
  executionId: string;
  logs: { timestamp: string; level: string; message: string }[];
  /** lines the log has in all; more than `logs.length` when the page stops short of the end */
  total: number;
}

const s = <T>(path: string, opts?: Parameters<typeof svc>[2]) => svc<T>('scheduler', path, opts);
// no stream on this service: refetch when the window gets focus again and after each action
const live = { refetchOnWindowFocus: true, staleTime: 0, meta: { inlineError: true } } as const;

export const useSources = () =>
  useQuery({ queryKey: queryKeys.scheduler('sources'), queryFn: ({ signal }) => s<{ items: Source[] }>('/sources', { query: { limit: 100 }, signal }).then((r) => r.items), ...live });
export const useWorkflows = () =>
  useQuery({ queryKey: queryKeys.scheduler('workflows'), queryFn: ({ signal }) => s<{ workflows: SchedulerWorkflow[] }>('/workflows', { signal }).then((r) => r.workflows), ...live });
export const useSchedules = () =>
  useQuery({ queryKey: queryKeys.scheduler('schedules'), queryFn: ({ signal }) => s<{ schedules: Schedule[] }>('/schedules', { signal }).then((r) => r.schedules), ...live });
export const useExecutions = () =>
  useQuery({
    queryKey: queryKeys.scheduler('executions'),
    queryFn: ({ signal }) => s<{ executions: Execution[] }>('/executions', { query: { limit: 50 }, signal }).then((r) => r.executions),
    ...live,
  });
/** The first `limit` lines of an execution's log (the API's page: at most 10,000 a request). */
export const useExecutionLogs = (id: string | null, limit: number) =>
  useQuery({
    queryKey: [...queryKeys.scheduler('logs'), id, limit],
    queryFn: ({ signal }) => s<ExecutionLogs>(`/executions/${encodeURIComponent(id ?? '')}/logs`, { query: { limit }, signal }),
    enabled: !!id,
    placeholderData: (previous) => previous, // "Show more" keeps the lines in view while the longer page loads
    ...live,
  });

const enc = encodeURIComponent;
export const checkSourceHealth = (id: string) => s<SourceHealth>(`/sources/${enc(id)}/health`, { method: 'POST' });
export const setSchedulePaused = (workflow: string, paused: boolean) => s<Schedule>(`/schedules/${enc(workflow)}/${paused ? 'pause' : 'resume'}`, { method: 'POST' });
export const runWorkflow = (name: string) => s<{ executionId: string }>(`/workflows/${enc(name)}/run`, { method: 'POST' });
export const stopExecution = (id: string) => s<{ status: string }>(`/executions/${enc(id)}/stop`, { method: 'POST' });
