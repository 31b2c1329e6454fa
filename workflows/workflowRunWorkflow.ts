/**
 * One execution of a scheduler workflow (service B): its tasks in order, each an activity; a failed task fails the
 * execution and skips the rest. Cancellation (POST /executions/{id}/stop) kills the running task's process and
 * records `stopped`. The execution row and its logs are projections, written by idempotent local activities one
 * per state change. The start (definition, row, first log lines) is one step, which also runs the first task when it
 * is a flow: since patch `local-start` a local activity inside the first workflow task (beginRunLocal), so a flow's
 * request leaves before that workflow task completes, handing over to the beginRun activity when it has no answer
 * within 3 s; before, beginRun alone (patch `lean-run-v2`). A first script runs after it in runScript (never twice: a
 * retried try reports the earlier try's outcome, activities/scheduler/taskOutcomes.ts). A stop reaches a running task
 * through PostgreSQL (its try fails ExecutionStopped) or Temporal (a cancellation); both are recorded `stopped`. Runs from before `lean-run-v2` start with the startExecution local activity, those from before `lean-run`
 * run workflowRunV1. A failed execution fails the Temporal workflow too (ApplicationFailure `ScheduledRunFailed`, not
 * retried), after its row and logs are written, so Temporal's UI and metrics see it.
 */
import { ApplicationFailure, CancellationScope, CancelledFailure, isCancellation, patched, proxyLocalActivities, proxySinks, uuid4, workflowInfo, type Sinks } from '@temporalio/workflow';
import type { Activities } from '../activities';
import type { ExecutionStatus, LogLine, TaskRunState } from '../lib/db/schedulerExecutions';
import type { WorkflowTask } from '../lib/db/schedulerWorkflows';
import type { TaskRunResult } from '../activities/scheduler/schedulerActivities';
import type { BegunRun, ExecutionStart, LocalStart } from '../activities/scheduler/executionProgress';
import type { WorkflowRunInput } from '../lib/scheduler/temporalSchedules';
import { failureMessage, stoppedByRequest } from './failureMessage';
import { scheduleIdOfRun, scheduledTime } from './scheduledTime';
import { workflowRunV1 } from './workflowRunV1';
import { beginRun, runScript, runSourceFlow } from './workflowRunTasks';

/** The error type of a failed execution's workflow failure. */
export const SCHEDULED_RUN_FAILED = 'ScheduledRunFailed';

// Projection writes retry until PostgreSQL answers.
const { startExecution, recordProgress, loadRunState } = proxyLocalActivities<Activities>({
  startToCloseTimeout: '30s',
  retry: { initialInterval: '500ms', maximumInterval: '30s' },
});
// One try: it answers within LOCAL_START_MS (3 s) or hands over to beginRun, which has the retries. The timeout is
// a backstop, below the workflow task timeout (10 s), so the first workflow task is never heartbeated.
const { beginRunLocal } = proxyLocalActivities<Activities>({
  startToCloseTimeout: '8s',
  retry: { maximumAttempts: 1 },
});

const now = (): string => new Date(Date.now()).toISOString();

/**
 * The worker's side of a run (workers/createWorker.ts): `prefetchDefinition` starts reading the run's definition
 * while Temporal completes the first workflow task, so beginRun finds it read (activities/scheduler/runDefinitions.ts).
 * A sink call is no command and is not made on replay, so histories are unchanged.
 */
export interface SchedulerSinks extends Sinks {
  scheduler: { prefetchDefinition(workflow: string): void };
}
const { scheduler } = proxySinks<SchedulerSinks>();

/**
 * Whether a patch is in effect: always in a run started with `paths` ≥ `since`, the run paths the patch came with (its
 * input decides, so replay takes the same branch, and no marker is recorded), else as `patched()` answers, for runs of
 * older schedules and histories. `since` is fixed per patch, so raising RUN_PATHS never turns an older patch back into
 * a `patched()` call in the replay of a run started with older paths.
 */
function inEffect(input: WorkflowRunInput, patchId: string, since: number): boolean {
  return (input.paths ?? 0) >= since || patched(patchId);
}

/**
 * The run's start (lean-run-v2's beginRun) inside the first workflow task (patch `local-start`): beginRunLocal, a local
 * activity, then beginRun when it handed over (activities/scheduler/executionProgress.ts). A stop is the run's; any
 * other failure of the local try is left to beginRun.
 */
async function beginRunInFirstTask(start: ExecutionStart): Promise<BegunRun | null> {
  const local = await beginRunLocal(start).catch((err: unknown): LocalStart => {
    if (isCancellation(err) || stoppedByRequest(err)) throw err;
    return { handedOver: true };
  });
  return 'begun' in local ? local.begun : beginRun({ ...start, handedOver: true });
}

export async function workflowRunWorkflow(input: WorkflowRunInput): Promise<string> {
  if (!inEffect(input, 'lean-run', 2)) return workflowRunV1(input);
  const run = {
    id: input.executionId ?? uuid4(),
    workflow: input.workflow,
    // the run's rows are this workflow's, never those of another created later under the name
    workflowId: input.workflowId ?? null,
    temporalWorkflowId: workflowInfo().workflowId,
    trigger: input.trigger,
    scheduledAt: input.trigger === 'schedule' ? scheduledTime() : null,
    startedAt: input.startedAt ?? now(),
  };
  const start = {
    ...run,
    temporalScheduleId: input.trigger === 'schedule' ? scheduleIdOfRun() : null,
    scheduleId: input.scheduleId ?? null,
    input: input.input ?? null,
    retryOf: input.retryOf ?? null,
  };
  let defs: WorkflowTask[] = [];
  let states: TaskRunState[] = [];
  let logSeq = 0;
  /** the first task's result when beginRun ran it (a flow) */
  let firstResult: TaskRunResult | null = null;
  /** false until the start (beginRunLocal or beginRun) returned: till then the task states are not known here */
  let begun = true;
  /** the start runs inside the first workflow task (local-start) */
  const local = inEffect(input, 'local-start', 3);
  if (local || inEffect(input, 'lean-run-v2', 2)) {
    begun = false;
    // the worker starts the read as this activation ends, before it has dispatched beginRunLocal (or, without
    // local-start, while Temporal completes this workflow task and hands out beginRun), which takes it
    scheduler.prefetchDefinition(input.workflow);
  } else {
    const started = await startExecution(start);
    if (!started) return 'deleted';
    ({ tasks: defs, states, logLines: logSeq } = started);
  }

  // the run's input (a schedule's or a retried execution's): flow tasks get it instead of their own, scripts in ARMADA_INPUT
  const runInput = input.input ?? null;
  const line = (level: LogLine['level'], message: string): LogLine => ({ key: `w:${logSeq++}`, ts: now(), level, message });
  const record = (status: ExecutionStatus, error: string | null, logs: LogLine[]) =>
    recordProgress({ ...run, status, completedAt: status === 'running' ? null : now(), tasks: states, error, logs });
  /** Marks the task in hand (with `taskError` when it failed) and the rest, writes the final row and lines. */
  const finish = async (current: number, status: 'failed' | 'stopped', error: string, taskError: string | null, logs: LogLine[]) => {
    const state = states[current];
    if (state && (state.status === 'running' || state.status === 'pending')) {
      state.status = status;
      state.completedAt ??= now();
      if (taskError !== null) state.error ??= taskError;
    }
    for (const rest of states.slice(current + 1)) rest.status = 'skipped';
    await record(status, error, logs);
  };
  const failed = (message: string) =>
    ApplicationFailure.create({ type: SCHEDULED_RUN_FAILED, message, nonRetryable: true, details: [{ executionId: run.id }] });

  let current = 0;
  try {
    if (!begun) {
      const started = local ? await beginRunInFirstTask(start) : await beginRun(start);
      if (!started) return 'deleted';
      ({ tasks: defs, states, logLines: logSeq, first: firstResult } = started);
      begun = true;
    }
    for (let i = 0; i < defs.length; i++) {
      current = i;
      const task = defs[i] as (typeof defs)[number];
      const state = states[i] as TaskRunState;
      if (i > 0) {
        state.status = 'running';
        state.startedAt = now();
        await record('running', null, [line('info', `Task ${defs[i - 1]?.name} completed`), line('info', `Task ${task.name} started`)]);
      }
      const result =
        i === 0 && firstResult
          ? firstResult
          : task.type === 'script'
          ? await runScript({ executionId: run.id, taskIndex: i, script: task.script, timeoutSeconds: task.timeout ?? null, input: runInput })
          : await runSourceFlow({
              executionId: run.id,
              taskIndex: i,
              source: task.source,
              flow: task.flow,
              input: runInput ?? task.input ?? null,
              timeoutSeconds: task.timeout ?? null,
            });
      state.startedAt = result.startedAt;
      state.completedAt = result.completedAt;
      state.output = result.output;
      if (!result.ok) {
        state.status = 'failed';
        state.error = result.error ?? 'failed';
        const error = `Task ${task.name} failed: ${state.error}`;
        await finish(i, 'failed', error, state.error, [line('error', error)]);
        throw failed(error);
      }
      state.status = 'completed';
    }
    const last = defs[defs.length - 1];
    await record('completed', null, [...(last ? [line('info', `Task ${last.name} completed`)] : []), line('info', 'Execution completed')]);
    return 'completed';
  } catch (err) {
    if (err instanceof ApplicationFailure && err.type === SCHEDULED_RUN_FAILED) throw err;
    if (!begun) {
      // beginRun failed or was stopped before it returned: the states it wrote (or the definition's) are read back
      ({ states, logLines: logSeq } = await CancellationScope.nonCancellable(() => loadRunState({ executionId: run.id, workflow: run.workflow })));
    }
    // a stop reaches the running task's try through PostgreSQL before Temporal's cancellation does (taskStop.ts)
    if (isCancellation(err) || stoppedByRequest(err)) {
      await CancellationScope.nonCancellable(() => finish(current, 'stopped', 'Stopped by request', null, [line('warning', 'Execution stopped')]));
      throw isCancellation(err) ? err : new CancelledFailure('Stopped by request');
    }
    const message = failureMessage(err);
    // the same words as a task that returned a failure (e.g. a platform still unreachable after the retries)
    const state = states[current];
    const text = state ? `Task ${state.name} failed: ${message}` : `Execution failed: ${message}`;
    await CancellationScope.nonCancellable(() => finish(current, 'failed', text, message, [line('error', text)]));
    throw failed(text);
  }
}
