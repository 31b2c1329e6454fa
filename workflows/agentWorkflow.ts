/**
 * The multi-agent service's actor: one long-lived workflow per configured agent (id `agent:<name>`). It owns the
 * agent's queue (high > normal > low, FIFO within a priority), runs one task at a time through `runAgentTask`, keeps
 * `currentTask`, `tasksCompleted` and its start time, and continues-as-new every N finished tasks (or when Temporal
 * suggests it), carrying the queue and counters over. Each task is a child workflow (`agent-task:<taskId>`,
 * workflows/agentTaskWorkflow.ts) that ends Failed when the task fails; histories from before that change ran the
 * task's activities here and still replay that way (patch `agent-task-child-workflow`).
 */
import {
  ApplicationFailure,
  CancellationScope,
  ChildWorkflowCancellationType,
  ChildWorkflowFailure,
  allHandlersFinished,
  condition,
  continueAsNew,
  executeChild,
  isCancellation,
  patched,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import type { AgentTaskOutcome } from '../activities/multiAgent/runAgentTask';
import { ArmadaAgent } from '../lib/temporal/searchAttributes';
import { agentTaskWorkflow, recordAgentTaskResult, runTaskOutcome } from './agentTaskWorkflow';

import {
  AGENT_RESTARTED,
  agentTaskWorkflowId,
  assignSignal,
  normalisePriority,
  restartSignal,
  statusQuery,
  type AgentPriority,
  type AgentWorkflowInput,
  type QueuedAgentTask,
} from './agentMessages';
import { failureMessage } from './failureMessage';

export type { AgentWorkflowInput, AgentStatus } from './agentMessages';

const RANK: Record<AgentPriority, number> = { high: 0, normal: 1, low: 2 };
/** Temporal's own "history is getting big" signal is honoured too, and this is a hard stop before it. */
const MAX_HISTORY_EVENTS = 20_000;

/**
 * One task as a child workflow, which records its own outcome. Returns the outcome and whether it was recorded (a
 * child that could not start, or was lost, leaves the recording to the actor).
 */
async function runTaskAsChild(agent: string, taskId: string): Promise<{ outcome: AgentTaskOutcome; recorded: boolean }> {
  try {
    const outcome = await executeChild(agentTaskWorkflow, {
      workflowId: agentTaskWorkflowId(taskId),
      args: [{ agent, taskId }],
      typedSearchAttributes: [{ key: ArmadaAgent, value: agent }],
      // a restart cancels the child and waits until its process group is gone and its outcome recorded
      cancellationType: ChildWorkflowCancellationType.WAIT_CANCELLATION_COMPLETED,
    });
    return { outcome, recorded: true };
  } catch (err) {
    if (err instanceof ChildWorkflowFailure && err.cause instanceof ApplicationFailure) {
      return { outcome: { status: 'failed', result: null, error: err.cause.message }, recorded: true };
    }
    return { outcome: { status: 'failed', result: null, error: isCancellation(err) ? AGENT_RESTARTED : failureMessage(err) }, recorded: false };
  }
}

/** Index of the next task to run: best priority, then earliest arrival. */
export function nextIndex(queue: readonly QueuedAgentTask[]): number {
  let best = -1;
  for (let i = 0; i < queue.length; i++) {
    const q = queue[i] as QueuedAgentTask;
    const b = queue[best] as QueuedAgentTask | undefined;
    if (!b || RANK[q.priority] < RANK[b.priority] || (RANK[q.priority] === RANK[b.priority] && q.seq < b.seq)) best = i;
  }
  return best;
}

export async function agentWorkflow(input: AgentWorkflowInput): Promise<void> {
  const queue: QueuedAgentTask[] = [...(input.queue ?? [])];
  let tasksCompleted = input.tasksCompleted ?? 0;
  let tasksFailed = input.tasksFailed ?? 0;
  let startedAt = input.startedAt ?? new Date().toISOString();
  let restarts = input.restarts ?? 0;
  let nextSeq = input.nextSeq ?? queue.reduce((m, q) => Math.max(m, q.seq + 1), 0);
  let current: { taskId: string; startedAt: string } | null = null;
  let scope: CancellationScope | null = null;
  let restartRequested = false;
  let finishedThisRun = 0;

  setHandler(assignSignal, ({ taskId, priority }) => {
    // A repeated delivery of the same assignment (client retry) is ignored.
    if (current?.taskId === taskId || queue.some((q) => q.taskId === taskId)) return;
    queue.push({ taskId, priority: normalisePriority(priority), seq: nextSeq++ });
  });
  setHandler(restartSignal, () => {
    startedAt = new Date().toISOString();
    restarts++;
    if (current && scope) {
      restartRequested = true;
      scope.cancel();
    }
  });
  setHandler(statusQuery, () => ({
    agent: input.agent,
    currentTask: current?.taskId ?? null,
    currentTaskStartedAt: current?.startedAt ?? null,
    tasksCompleted,
    tasksFailed,
    queued: queue.length,
    startedAt,
    restarts,
  }));

  const historyTooLong = () => workflowInfo().continueAsNewSuggested || workflowInfo().historyLength > MAX_HISTORY_EVENTS;
  const shouldContinueAsNew = () => finishedThisRun >= input.continueAsNewEvery || historyTooLong();

  for (;;) {
    await condition(() => queue.length > 0 || shouldContinueAsNew());
    if (shouldContinueAsNew()) break;
    const [next] = queue.splice(nextIndex(queue), 1);
    if (!next) continue;
    current = { taskId: next.taskId, startedAt: new Date().toISOString() };
    restartRequested = false;
    let outcome: AgentTaskOutcome;
    let recorded = false;
    const asChild = patched('agent-task-child-workflow');
    try {
      const s = new CancellationScope();
      scope = s;
      if (asChild) ({ outcome, recorded } = await s.run(() => runTaskAsChild(input.agent, next.taskId)));
      else outcome = await s.run(() => runTaskOutcome({ agent: input.agent, taskId: next.taskId }));
      if (restartRequested && outcome.status === 'failed' && !recorded) outcome = { ...outcome, error: AGENT_RESTARTED };
    } finally {
      scope = null;
    }
    if (outcome.status !== 'skipped') {
      const done = { agent: input.agent, taskId: next.taskId, status: outcome.status, result: outcome.result, error: outcome.error };
      if (!recorded) await CancellationScope.nonCancellable(() => recordAgentTaskResult(done));
      if (outcome.status === 'completed') tasksCompleted++;
      else tasksFailed++;
    }
    current = null;
    finishedThisRun++;
  }

  await condition(allHandlersFinished);
  await continueAsNew<typeof agentWorkflow>({
    agent: input.agent,
    continueAsNewEvery: input.continueAsNewEvery,
    queue,
    tasksCompleted,
    tasksFailed,
    startedAt,
    restarts,
    nextSeq,
  });
}
