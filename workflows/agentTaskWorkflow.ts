/**
 * agentTaskWorkflow (`agent-task:<taskId>`): one multi-agent task, a child of its agent's actor (agentWorkflow). Runs
 * the agent process (runAgentTask), records the outcome on the task row, and then ends as the task did: a failed task
 * is a Failed workflow (non-retryable AGENT_TASK_FAILED carrying the error), so Temporal's UI and workflow-failure
 * metrics show it, while the actor itself stays open. Cancellation comes from the actor's restart.
 */
import { ApplicationFailure, CancellationScope, isCancellation, proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../activities';
import type { AgentTaskOutcome } from '../activities/multiAgent/runAgentTask';
import { AGENT_TASK_ACTIVITY_TIMEOUT_MS } from '../lib/agents/agentTaskTimeout';
import { AGENT_RESTARTED, AGENT_TASK_FAILED, type AgentTaskInput } from './agentMessages';
import { failureMessage } from './failureMessage';

// The process may run long: heartbeats show it is alive and carry cancellation (restart) to it; the activity kills
// its process group and only then reports cancelled. Retries cover a lost worker, not a failing agent (a non-zero
// exit is a result, not an error). 24 hours: multiAgent.taskTimeoutMs is bounded so that its timeout comes first.
export const { runAgentTask } = proxyActivities<Activities>({
  startToCloseTimeout: AGENT_TASK_ACTIVITY_TIMEOUT_MS,
  heartbeatTimeout: '10s',
  cancellationType: 'WAIT_CANCELLATION_COMPLETED',
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '30s', maximumAttempts: 3 },
});
// A projection write retries until PostgreSQL is back.
export const { recordAgentTaskResult } = proxyActivities<Activities>({
  startToCloseTimeout: '30s',
  retry: { initialInterval: '1s', maximumInterval: '30s' },
});

/** Runs the task; a thrown error or a cancellation (the actor's restart) is a failed outcome, not an exception. */
export async function runTaskOutcome(input: AgentTaskInput): Promise<AgentTaskOutcome> {
  try {
    return await runAgentTask(input);
  } catch (err) {
    return { status: 'failed', result: null, error: isCancellation(err) ? AGENT_RESTARTED : failureMessage(err) };
  }
}

export async function agentTaskWorkflow(input: AgentTaskInput): Promise<AgentTaskOutcome> {
  const outcome = await runTaskOutcome(input);
  if (outcome.status === 'skipped') return outcome; // already finished, or gone: nothing of ours failed
  await CancellationScope.nonCancellable(() => recordAgentTaskResult({ ...input, status: outcome.status as 'completed' | 'failed', result: outcome.result, error: outcome.error }));
  if (outcome.status === 'failed') {
    throw ApplicationFailure.create({ type: AGENT_TASK_FAILED, message: outcome.error ?? 'the agent task failed', nonRetryable: true, details: [{ result: outcome.result }] });
  }
  return outcome;
}
