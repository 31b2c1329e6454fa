/**
 * The multi-agent service's actor: one long-lived workflow per configured agent (id `agent:<name>`). It owns the
 * agent's queue (high > normal > low, FIFO within a priority), runs one task at a time through `runAgentTask`, keeps
 * `currentTask`, `tasksCompleted` and its start time, and continues-as-new every N finished tasks (or when Temporal
 * suggests it), carrying the queue and counters over.
 */
import {
  CancellationScope,
  allHandlersFinished,
  condition,
  continueAsNew,
  isCancellation,
  proxyActivities,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import type { Activities } from '../activities';

import {
  AGENT_RESTARTED,
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

// The process may run long: heartbeats show it is alive and carry cancellation (restart) to it; the activity kills
// its process group and only then reports cancelled. Retries cover a lost worker, not a failing agent (a non-zero
// exit is a result, not an error).
const { runAgentTask } = proxyActivities<Activities>({
  startToCloseTimeout: '24 hours',
  heartbeatTimeout: '10s',
  cancellationType: 'WAIT_CANCELLATION_COMPLETED',
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '30s', maximumAttempts: 3 },
});
// A projection write retries until PostgreSQL is back.
const { recordAgentTaskResult } = proxyActivities<Activities>({
  startToCloseTimeout: '30s',
  retry: { initialInterval: '1s', maximumInterval: '30s' },
});

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
    let outcome: { status: 'completed' | 'failed' | 'skipped'; result: string | null; error: string | null };
    try {
      const s = new CancellationScope();
      scope = s;
      outcome = await s.run(() => runAgentTask({ agent: input.agent, taskId: next.taskId }));
    } catch (err) {
      if (restartRequested || isCancellation(err)) outcome = { status: 'failed', result: null, error: AGENT_RESTARTED };
      else outcome = { status: 'failed', result: null, error: failureMessage(err) };
    } finally {
      scope = null;
    }
    if (outcome.status !== 'skipped') {
      const done = { agent: input.agent, taskId: next.taskId, status: outcome.status, result: outcome.result, error: outcome.error };
      await CancellationScope.nonCancellable(() => recordAgentTaskResult(done));
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
