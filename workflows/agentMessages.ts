/** The messages of agentWorkflow, shared by the workflow and the clients that send them (no workflow code here). */
import { defineQuery, defineSignal } from '@temporalio/workflow';

export type AgentPriority = 'high' | 'normal' | 'low';

export interface AssignInput {
  taskId: string;
  /** `medium` is accepted as an alias of `normal`. */
  priority: AgentPriority | 'medium';
}

export interface QueuedAgentTask {
  taskId: string;
  priority: AgentPriority;
  /** arrival order, for FIFO within a priority */
  seq: number;
}

export interface AgentWorkflowInput {
  agent: string;
  continueAsNewEvery: number;
  /** Carried over continue-as-new: */
  queue?: QueuedAgentTask[];
  tasksCompleted?: number;
  tasksFailed?: number;
  startedAt?: string;
  restarts?: number;
  nextSeq?: number;
}

export interface AgentStatus {
  agent: string;
  currentTask: string | null;
  currentTaskStartedAt: string | null;
  tasksCompleted: number;
  tasksFailed: number;
  queued: number;
  /** When the agent (re)started: uptime is measured from here; a restart resets it. */
  startedAt: string;
  restarts: number;
}

export const assignSignal = defineSignal<[AssignInput]>('assign');
export const restartSignal = defineSignal<[]>('restart');
export const statusQuery = defineQuery<AgentStatus>('status');

export const AGENT_RESTARTED = 'agent restarted';

/** `medium` (and anything unknown) is `normal`. */
export function normalisePriority(p: string | undefined): AgentPriority {
  if (p === 'high' || p === 'low') return p;
  return 'normal';
}

/** Each task runs as a child workflow of its agent's actor (workflows/agentTaskWorkflow.ts) with this id. */
export const agentTaskWorkflowId = (taskId: string): string => `agent-task:${taskId}`;

/** The ApplicationFailure type a failed agent task's workflow ends with. */
export const AGENT_TASK_FAILED = 'AGENT_TASK_FAILED';

export interface AgentTaskInput {
  agent: string;
  taskId: string;
}
