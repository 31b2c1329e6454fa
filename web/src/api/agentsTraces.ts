/** The multi-agent and trace services through the task service's proxy (/svc/agents, /svc/traces). No streams. */
import { useQueries, useQuery } from '@tanstack/react-query';
import { svc } from './client';
import { queryKeys } from './queryKeys';

export interface Agent {
  name: string;
  role: string;
  llm: string;
  status: 'active' | 'inactive' | 'unknown';
  tools: string[];
}
export interface AgentStatus {
  name: string;
  status: string;
  currentTask: string | null;
  tasksCompleted: number;
  tasksFailed: number;
  queued: number;
  uptime: string;
}
export interface AgentTask {
  taskId: string;
  agent: string;
  task: string;
  priority: string;
  status: 'assigned' | 'running' | 'completed' | 'failed';
  result: string | null;
  error: string | null;
  createdAt: string;
  completedAt: string | null;
}
export type TraceStatus = 'sent' | 'delivered' | 'read' | 'failed';
export const TRACE_STATUSES: TraceStatus[] = ['sent', 'delivered', 'read', 'failed'];
export interface Trace {
  id: string;
  messageId: string;
  instance: string;
  to: string;
  message: string;
  status: TraceStatus;
  sentAt: string;
}
export interface TraceAnalytics {
  period: { start: string; end: string };
  totalMessages: number;
  byStatus: Record<TraceStatus, number>;
  byInstance: Record<string, number>;
  byDay: { date: string; count: number; byStatus: Record<TraceStatus, number> }[];
}
export interface TraceFilters {
  instance?: string;
  phone?: string;
  status?: string;
}

// no stream on these services: refetch when the window gets focus again and after each action
const live = { refetchOnWindowFocus: true, staleTime: 0, meta: { inlineError: true } } as const;

export const useAgents = () =>
  useQuery({ queryKey: queryKeys.agents(), queryFn: ({ signal }) => svc<{ agents: Agent[] }>('agents', '/agents', { signal }).then((r) => r.agents), ...live });

export const useAgentStatuses = (names: string[]) =>
  useQueries({
    queries: names.map((name) => ({
      queryKey: [...queryKeys.agents(), name, 'status'],
      queryFn: ({ signal }: { signal: AbortSignal }) => svc<AgentStatus>('agents', `/agents/${encodeURIComponent(name)}/status`, { signal }),
      ...live,
    })),
  });

export const useAgentTasks = () =>
  useQuery({
    queryKey: [...queryKeys.agents(), 'tasks'],
    queryFn: ({ signal }) => svc<{ tasks: AgentTask[] }>('agents', '/tasks', { query: { limit: 20 }, signal }).then((r) => r.tasks),
    ...live,
  });

export const assignAgentTask = (agent: string, task: string, priority: string) =>
  svc<AgentTask>('agents', '/tasks', { method: 'POST', body: { agent, task, priority } });

export const useTraces = (f: TraceFilters) =>
  useQuery({
    queryKey: queryKeys.traces(JSON.stringify(f)),
    queryFn: ({ signal }) => svc<{ traces: Trace[]; total: number }>('traces', '/traces', { query: { ...f, limit: 50 }, signal }),
    ...live,
  });

export const useTraceAnalytics = (days: number) =>
  useQuery({
    queryKey: queryKeys.traces(`analytics:${days}`),
    queryFn: ({ signal }) => svc<TraceAnalytics>('traces', '/traces/analytics', { query: { days }, signal }),
    ...live,
  });
