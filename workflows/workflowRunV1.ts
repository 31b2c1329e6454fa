/**
 * workflowRunWorkflow as it ran before the lean run (an activity per projection write, a failed run completing with
 * "failed"). Executions started before that change replay through this code (patch `lean-run`); delete it once none
 * of them can still be running (the longest script timeout is 25 hours) and deprecate the patch.
 */
import { CancellationScope, CancelledFailure, isCancellation, proxyActivities, uuid4, workflowInfo } from '@temporalio/workflow';
import type { Activities } from '../activities';
import type { TaskRunState } from '../lib/db/schedulerExecutions';
import type { WorkflowRunInput } from '../lib/scheduler/temporalSchedules';
import { failureMessage, stoppedByRequest } from './failureMessage';
import { runScript, runSourceFlow } from './workflowRunTasks';
import { scheduledTime } from './scheduledTime';

// Projection writes retry until PostgreSQL answers.
const { loadWorkflowDefinition, recordExecution, appendLog } = proxyActivities<Activities>({
  startToCloseTimeout: '30s',
  retry: { initialInterval: '500ms', maximumInterval: '30s' },
});

export async function workflowRunV1(input: WorkflowRunInput): Promise<string> {
  const info = workflowInfo();
  const executionId = input.executionId ?? uuid4();
  const startedAt = input.startedAt ?? new Date(Date.now()).toISOString();
  const scheduledAt = input.trigger === 'schedule' ? scheduledTime() : null;
  const def = await loadWorkflowDefinition({ workflow: input.workflow });
  if (!def) return 'deleted'; // the workflow was deleted after this start was queued

  // the run's input (a schedule's or a retried execution's): flow tasks get it instead of their own, scripts in ARMADA_INPUT
  const runInput = input.input ?? null;
  const tasks: TaskRunState[] = def.tasks.map((t) => ({ name: t.name, type: t.type, status: 'pending', startedAt: null, completedAt: null, output: '' }));
  let logSeq = 0;
  const log = (level: 'info' | 'warning' | 'error', message: string) =>
    appendLog({ executionId, key: `w:${logSeq++}`, ts: new Date(Date.now()).toISOString(), level, message });
  const record = (status: 'running' | 'completed' | 'failed' | 'stopped', error: string | null = null, first = false) =>
    recordExecution({
      first,
      id: executionId,
      workflow: input.workflow,
      temporalWorkflowId: info.workflowId,
      trigger: input.trigger,
      status,
      scheduledAt,
      startedAt,
      completedAt: status === 'running' ? null : new Date(Date.now()).toISOString(),
      tasks,
      error,
      scheduleId: input.scheduleId ?? null,
      input: runInput,
      retryOf: input.retryOf ?? null,
    });

  const recorded = await record('running', null, true);
  if (!recorded.exists) return 'deleted';
  await log('info', `Execution started (${input.trigger}${input.retryOf ? `, retry of ${input.retryOf}` : ''})`);

  let current = -1;
  try {
    for (let i = 0; i < def.tasks.length; i++) {
      current = i;
      const task = def.tasks[i] as (typeof def.tasks)[number];
      const state = tasks[i] as TaskRunState;
      state.status = 'running';
      state.startedAt = new Date(Date.now()).toISOString();
      await record('running');
      await log('info', `Task ${task.name} started`);
      const result =
        task.type === 'script'
          ? await runScript({ executionId, taskIndex: i, script: task.script, timeoutSeconds: task.timeout ?? null, input: runInput })
          : await runSourceFlow({ executionId, taskIndex: i, source: task.source, flow: task.flow, input: runInput ?? task.input ?? null, timeoutSeconds: task.timeout ?? null });
      state.startedAt = result.startedAt;
      state.completedAt = result.completedAt;
      state.output = result.output;
      if (!result.ok) {
        state.status = 'failed';
        state.error = result.error ?? 'failed';
        for (const rest of tasks.slice(i + 1)) rest.status = 'skipped';
        await log('error', `Task ${task.name} failed: ${state.error}`);
        await record('failed', `Task ${task.name} failed: ${state.error}`);
        return 'failed';
      }
      state.status = 'completed';
      await log('info', `Task ${task.name} completed`);
    }
    await log('info', 'Execution completed');
    await record('completed');
    return 'completed';
  } catch (err) {
    if (isCancellation(err) || stoppedByRequest(err)) {
      await CancellationScope.nonCancellable(async () => {
        const state = tasks[current];
        if (state) {
          state.status = 'stopped';
          state.completedAt = new Date(Date.now()).toISOString();
        }
        for (const rest of tasks.slice(current + 1)) rest.status = 'skipped';
        await log('warning', 'Execution stopped');
        await record('stopped', 'Stopped by request');
      });
      throw isCancellation(err) ? err : new CancelledFailure('Stopped by request');
    }
    const message = failureMessage(err);
    await CancellationScope.nonCancellable(async () => {
      const state = tasks[current];
      if (state) {
        state.status = 'failed';
        state.error = message;
        state.completedAt = new Date(Date.now()).toISOString();
      }
      for (const rest of tasks.slice(current + 1)) rest.status = 'skipped';
      // the same words as a task that returned a failure (e.g. a platform still unreachable after the retries)
      const text = state ? `Task ${state.name} failed: ${message}` : `Execution failed: ${message}`;
      await log('error', text);
      await record('failed', text);
    });
    return 'failed';
  }
}
