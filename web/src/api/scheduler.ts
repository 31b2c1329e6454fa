/** The scheduler service through the task service's proxy (/svc/scheduler/api/v1; docs/scheduler.md). No stream. */
import { useQuery } from '@tanstack/react-query';
import { ApiError, svc } from './client';
import { isUnavailable, retryWhileUnavailable } from './unavailable';
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

/**
 * How often the lists are read again while an execution of them runs: the service has no stream, and a run started
 * with Run now stayed "running" (its duration the few ms it had when read) until a focus or Refresh, however long it
 * had been over. Only while one runs, and not in a hidden tab (TanStack Query's refetchIntervalInBackground is off).
 */
export const EXECUTION_FOLLOW_MS = 3_000;

/** The Scheduler screen's four lists, by name. */
export const SCHEDULER_LISTS = ['sources', 'workflows', 'schedules', 'executions'] as const;
export type SchedulerList = (typeof SCHEDULER_LISTS)[number];
export interface SchedulerLists {
  sources?: Source[];
  workflows?: SchedulerWorkflow[];
  schedules?: Schedule[];
  executions?: Execution[];
  /** the lists that failed on their own (a 500 of one route), each with its error; the others came */
  errors: Partial<Record<SchedulerList, ApiError>>;
}

/**
 * The four lists, read together as one query: they come from one service and come and go with it. So the screen shows
 * them at once (one that came first moved, buttons and all, when a list above it came), the service down or refusing
 * the task service's key is one error for the screen (it was said in each section), and after an outage one read, on
 * one timer, brings all four back (each list came back on its own 5 s timer). Such an error (502, 503, 504, no answer,
 * 401, 403) fails the whole read; another error of one list (a 500) is kept in `errors`, the other lists shown.
 */
export const useSchedulerLists = () =>
  useQuery({
    queryKey: queryKeys.scheduler('lists'),
    queryFn: async ({ signal }): Promise<SchedulerLists> => {
      const reads = await Promise.allSettled([
        s<{ items: Source[] }>('/sources', { query: { limit: 100 }, signal }).then((r) => r.items),
        s<{ workflows: SchedulerWorkflow[] }>('/workflows', { signal }).then((r) => r.workflows),
        s<{ schedules: Schedule[] }>('/schedules', { signal }).then((r) => r.schedules),
        s<{ executions: Execution[] }>('/executions', { query: { limit: 50 }, signal }).then((r) => r.executions),
      ]);
      const failures = reads.flatMap((r) => (r.status === 'rejected' ? [r.reason as unknown] : []));
      // not an answer of the service (aborted: the screen was left, or a newer read replaced this one)
      const other = failures.find((e) => !(e instanceof ApiError));
      if (other !== undefined) throw other;
      const screenWide = (failures as ApiError[]).find((e) => isUnavailable(e as unknown) || e.status === 401 || e.status === 403);
      if (screenWide) throw screenWide;
      const errors: SchedulerLists['errors'] = {};
      const got = <T>(name: SchedulerList, r: PromiseSettledResult<T>): T | undefined => {
        if (r.status === 'fulfilled') return r.value;
        errors[name] = r.reason as ApiError;
        return undefined;
      };
      const [sources, workflows, schedules, executions] = reads;
      return {
        sources: got('sources', sources),
        workflows: got('workflows', workflows),
        schedules: got('schedules', schedules),
        executions: got('executions', executions),
        errors,
      };
    },
    ...live,
    // the service down: its retry (main.tsx); else, while an execution runs, follow it
    refetchInterval: (query) => retryWhileUnavailable(query) || (query.state.data?.executions?.some((e) => e.status === 'running') ? EXECUTION_FOLLOW_MS : false),
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
