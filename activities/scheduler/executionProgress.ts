/**
 * The execution projection of the lean run (workflowRunWorkflow): run as local activities, so a write costs a
 * PostgreSQL round trip and no trip through Temporal. `startExecution` does everything before the first task in one
 * step; `recordProgress` writes the row and the log lines of one state change together. Both are idempotent (the
 * row never leaves a terminal status, log lines carry stable keys).
 */
import { Context } from '@temporalio/activity';
import { CancelledFailure } from '@temporalio/common';
import {
  appendExecutionLogs,
  getExecution,
  upsertExecution,
  type ExecutionRecord,
  type ExecutionWrite,
  type LogLine,
  type TaskRunState,
} from '../../lib/db/schedulerExecutions';
import { FOREIGN_KEY_VIOLATION, withTransaction } from '../../lib/db/pool';
import { getSchedule, markScheduleRan } from '../../lib/db/schedulerSchedules';
import { getWorkflow, type WorkflowRow, type WorkflowTask } from '../../lib/db/schedulerWorkflows';
import { faultPoint } from '../../lib/faults';
import { lazyEncryptionKey } from '../../lib/keys';
import { schedulerMetrics, type SchedulerMetrics } from '../../lib/scheduler/metrics';
import { actionScheduledAt } from '../../lib/scheduler/temporalSchedules';
import type { ActivityDeps } from '../index';
import { keepAlive } from '../keepAlive';
import { createRunDefinitions } from './runDefinitions';
import { claimFlowTask, countFinish, runFlowTask, withTaskStop, type TaskRunResult } from './schedulerActivities';
import { localTryId } from './taskOutcomes';
import { isTaskStopFailure, type TaskStop } from './taskStop';
import { untilAnswered as untilPostgresAnswers } from './untilAnswered';

/** What the workflow knows when it starts: the row's identity and times. */
export interface ExecutionStart {
  id: string;
  workflow: string;
  /** the id of the workflow that started the run; null or absent on runs from before runs carried it (see startedBy) */
  workflowId?: string | null;
  temporalWorkflowId: string;
  trigger: 'manual' | 'schedule';
  /** the nominal (cron) time of a scheduled run */
  scheduledAt: string | null;
  startedAt: string;
  /** the Temporal Schedule that started the run (TemporalScheduledById), null for a manual run */
  temporalScheduleId: string | null;
  /** the schedule row that started the run (absent on schedules from before schedule rows, and on manual runs) */
  scheduleId: string | null;
  /** the run's input (a schedule's or a retried execution's), null = none */
  input: unknown;
  /** the execution a retry re-runs */
  retryOf: string | null;
}

export interface StartedExecution {
  tasks: WorkflowTask[];
  /** the row's task states as written: the first task running */
  states: TaskRunState[];
  /** log keys `w:0` … `w:<n-1>` are taken */
  logLines: number;
}

/** The start of a run and, when the first task is a flow, that task's result (null for a script: the workflow runs it). */
export interface BegunRun extends StartedExecution {
  first: TaskRunResult | null;
}

/** beginRunLocal's answer: the start (as beginRun's: null = the run does nothing), or that beginRun takes over. */
export type LocalStart = { begun: BegunRun | null } | { handedOver: true };

/**
 * How long beginRunLocal waits inside the first workflow task: well under the workflow task timeout (10 s), so the
 * task is never heartbeated, and long enough for a flow that answers at once (docs/scheduler.md#local-start).
 */
export const LOCAL_START_MS = 3_000;

/** beginRun's attempts (workflows/workflowRunTasks.ts): a platform that cannot be reached is tried three times, 2 s and 4 s apart. */
export const BEGIN_RUN_ATTEMPTS = 3;

/** How long a jittered run waits for its Schedule to list the action (the Schedule records it right after the start). */
const ACTION_LOOKUP_TRIES = 10;
const ACTION_LOOKUP_PAUSE_MS = 200;

export function createExecutionProgressActivities(deps: ActivityDeps) {
  const metrics = schedulerMetrics(deps.metrics);

  const definitions = deps.runDefinitions ?? createRunDefinitions({ db: deps.db, metrics: deps.metrics, logger: deps.logger });

  /**
   * Writes the row, then its lines; `exists: false` when the row's workflow (or the row) is gone. The row is its
   * workflow's by id (upsertExecution), so a run whose workflow was deleted writes nothing, even for a new workflow
   * of the same name. `onHeld` (a run's start) learns, before the commit, whether the run goes on: once the upsert
   * wrote the row, the transaction holds it and its workflow's row (locked FOR KEY SHARE by the upsert) until it
   * commits, so a deletion of the workflow cannot commit meanwhile without listing the run. A start goes on only when
   * its row was written `running`: a row already finished (a manual run the API gave up on when Temporal did not answer
   * its start: docs/scheduler.md#temporal-deadlines) gets no start lines, and the run does nothing.
   */
  async function write(e: ExecutionRecord, lines: LogLine[], onHeld?: (goesOn: boolean) => void): Promise<{ exists: boolean; changed: boolean }> {
    let result: ExecutionWrite | undefined;
    // A foreign-key violation is a link the statement read in its snapshot and a concurrent deletion then removed:
    // the schedule's or the retried execution's (both ON DELETE SET NULL, so the write goes on without it, once
    // more), or the row's own, gone with its workflow (the second try finds the workflow gone: `gone`). Before, the
    // first was taken for "the workflow is gone" and a run whose schedule was deleted at that moment ended `deleted`.
    for (let attempt = 1; !result; attempt++) {
      try {
        // one transaction: a reader never sees the new status without the log lines of the same step
        result = await withTransaction(deps.db, async (c) => {
          const written = await upsertExecution(c, e);
          // The lines go with the row's change only: a write that finds the row finished ('unchanged') adds none. A
          // finished run's log is complete, and such a write is a repeat: the terminal record of a local activity run
          // again after its workflow task was retried, whose loadRunState counted the lines anew, so its line came
          // with the next key ("Execution stopped" twice in ci47b), or a late write after the reconciler failed the row.
          const goesOn = written.outcome === 'written';
          onHeld?.(goesOn);
          if (goesOn) await appendExecutionLogs(c, e.id, lines);
          return written;
        });
      } catch (err) {
        if ((err as { code?: string }).code !== FOREIGN_KEY_VIOLATION) throw err;
        if (attempt >= 2) {
          onHeld?.(false);
          return { exists: false, changed: false };
        }
      }
    }
    if (result.outcome === 'gone') return { exists: false, changed: false };
    if (result.outcome === 'written') countFinish(metrics, e, result.previous);
    return { exists: true, changed: result.outcome === 'written' };
  }

  /** The row's first state: the first task running, with the first log lines ("Execution started", "Task … started"). */
  function firstState(input: ExecutionStart, def: WorkflowRow) {
    const now = new Date().toISOString();
    const first = def.tasks[0];
    const states: TaskRunState[] = def.tasks.map((t, i) => ({
      name: t.name,
      type: t.type,
      status: i === 0 ? 'running' : 'pending',
      startedAt: i === 0 ? now : null,
      completedAt: null,
      output: '',
    }));
    const started = `Execution started (${input.trigger}${input.retryOf ? `, retry of ${input.retryOf}` : ''})`;
    const lines: LogLine[] = [{ key: 'w:0', ts: now, level: 'info', message: started }];
    if (first) lines.push({ key: 'w:1', ts: now, level: 'info', message: `Task ${first.name} started` });
    const { temporalScheduleId: _scheduleId, ...row } = input;
    const record: ExecutionRecord = { ...row, workflowId: input.workflowId ?? def.id, status: 'running', completedAt: null, tasks: states, error: null };
    return { states, lines, record };
  }

  /** What follows a written start: a one-time schedule marked ran, the started count and the schedule lag. */
  async function afterStart(input: ExecutionStart, def: WorkflowRow, changed: boolean): Promise<void> {
    // a one-time schedule is complete once its run started (idempotent: the first time wins)
    if (input.scheduleId) await markScheduleRan(deps.db, input.scheduleId, input.startedAt);
    if (!changed) return;
    metrics.executions.inc({ workflow: input.workflow, status: 'started' });
    if (input.scheduledAt) {
      // the jitter of the schedule that started the run (its row; the default schedule's on schedules from before rows)
      const jitterMs = input.scheduleId ? ((await getSchedule(deps.db, input.workflow, input.scheduleId))?.jitter_ms ?? 0) : def.jitter_ms;
      if (jitterMs > 0 && input.temporalScheduleId) void observeJitteredLag(deps, metrics, input.temporalScheduleId, input);
      else metrics.lag.observe(Math.max(0, Date.parse(input.startedAt) - Date.parse(input.scheduledAt)) / 1000);
    }
  }

  const encryptionKey = lazyEncryptionKey(deps.config);
  const inFlight = handedOverStarts();

  /**
   * One try of beginRun or beginRunLocal (below), its stop watched by the caller. `tryId`: the id its claim of a first
   * flow is made under (beginRun's: its attempt); `prefetched`: take the read its workflow task started; `lastTry`: a
   * platform that cannot be reached is the task's result, not given back; `count`: a written start is counted.
   */
  async function beginRunTry(input: ExecutionStart, stop: TaskStop, opts: { tryId?: number; prefetched: boolean; lastTry: boolean; count: boolean }): Promise<BegunRun | null> {
    /** A PostgreSQL step, run until PostgreSQL answers (an outage delays the run); a stop ends the wait. */
    const untilAnswered = <T>(what: string, fn: () => Promise<T>): Promise<T> => untilPostgresAnswers(deps.logger, what, stop.signal, fn);
    const { workflowExecution } = Context.current().info;
    // the first attempt takes the read its workflow task prefetched (activities/scheduler/runDefinitions.ts)
    const prefetched = opts.prefetched && workflowExecution ? definitions.take(`${workflowExecution.workflowId}/${workflowExecution.runId}`) : undefined;
    const readNow = () => untilAnswered('load workflow', () => definitions.read(input.workflow));
    const def = await (prefetched ? prefetched.catch(readNow) : readNow());
    // the workflow was deleted after this start was queued (and maybe another created under its name)
    if (!def || !startedBy(def, input)) return null;
    await faultPoint(deps.faults, 'beginRun.afterDefinition', { workflow: input.workflow, executionId: input.id, temporalWorkflowId: input.temporalWorkflowId });
    const { states, lines, record } = firstState(input, def);
    const first = def.tasks[0];
    // a first flow is claimed for this try beside the row's write (no round trip added before the request):
    // a try that finds the request already sent by an earlier one reports that one's outcome instead of sending
    const claim = first?.type === 'flow' ? claimFlowTask(deps, { executionId: input.id, taskIndex: 0 }, stop.signal, opts.tryId) : undefined;
    claim?.catch(() => undefined); // awaited below; a stop ends it with the same cancellation
    let held: (goesOn: boolean) => void = () => undefined;
    const rowHeld = new Promise<boolean>((resolve) => {
      held = resolve;
    });
    const writing = untilAnswered('write execution', () => write(record, lines, held));
    const started = writing.then((w) => (w.changed ? untilAnswered('after start', () => afterStart(input, def, opts.count)) : undefined));
    started.catch(() => undefined); // awaited below; a stop during the flow ends both with the same cancellation
    let result: TaskRunResult | null = null;
    // the flow's request waits for the row to be held, not for its commit; a workflow deleted meanwhile gets none
    if (claim && first?.type === 'flow' && (await Promise.race([rowHeld, writing.then((w) => w.changed)]))) {
      const task = { executionId: input.id, taskIndex: 0, source: first.source, flow: first.flow, input: input.input ?? first.input ?? null, timeoutSeconds: first.timeout ?? null };
      // three tries in all, the local one counted (its give-back is in the task's row)
      result = await runFlowTask(deps, encryptionKey(), task, def.first_source ?? undefined, { lastTry: opts.lastTry, maxTries: BEGIN_RUN_ATTEMPTS, rowWritten: writing, claim, stop });
    } else if (claim) void claim.then((c) => c.kind === 'held' && c.holder.stop(), () => undefined); // nothing is sent
    const written = await writing;
    await started;
    // deleted between the read and the write, or a manual run whose start the API gave up on (its row is finished)
    if (!written.changed) return null;
    return { tasks: def.tasks, states, logLines: lines.length, first: result };
  }

  return {
    /** Loads the definition, writes the row with its first task running and the first log lines. null = deleted. */
    async startExecution(input: ExecutionStart): Promise<StartedExecution | null> {
      const def = await getWorkflow(deps.db, input.workflow);
      if (!def || !startedBy(def, input)) return null; // the workflow was deleted after this start was queued
      const { states, lines, record } = firstState(input, def);
      const written = await write(record, lines);
      if (!written.exists) return null;
      await afterStart(input, def, written.changed);
      return { tasks: def.tasks, states, logLines: lines.length };
    },

    /**
     * The run's start as one activity (lean-run-v2): takes the definition with the first task's source (prefetched
     * by its workflow task, from the worker's cache or one query: activities/scheduler/runDefinitions.ts),
     * writes the row with its first task running and the first log lines and, when that task is a flow, sends its run
     * request once the row is held (see below), and returns the answer. A script is left to the workflow (runScript,
     * never run twice). null = the workflow was deleted, or the run's row is finished already (a manual run the API
     * answered 503 for, its start having got no answer in time): the run then does nothing.
     * What a reader sees: the row (first task running, its two lines) is committed before the activity reports
     * anything and before any line of the task is written, so Armada never shows an answer, a task line or a later
     * state without the start. Only the platform can get the request before the row is visible, by the rest of the
     * row's transaction: the request leaves once the row's upsert ran in it (write's `onHeld`), never on the
     * definition alone. So a deletion of the workflow either committed before that upsert (nothing is sent, the run
     * ends "deleted") or waits for the commit, then lists the run and stops it (docs/scheduler.md#deleting).
     * Idempotent: the row never leaves a terminal status and the lines carry stable keys; a retry writes the same
     * start again, and sends the first flow's request again only when the earlier try gave the task back (the platform
     * could not be reached); otherwise it reports that try's outcome (docs/scheduler.md#task-outcomes).
     */
    async beginRun(input: ExecutionStart & { handedOver?: boolean }): Promise<BegunRun | null> {
      const { handedOver, ...start } = input;
      const { attempt } = Context.current().info;
      // counted on the first attempt only, and not after beginRunLocal (which counted it): a retry rewrites the same start
      const opts = { prefetched: attempt === 1 && !handedOver, lastTry: attempt >= BEGIN_RUN_ATTEMPTS, count: attempt === 1 && !handedOver };
      // heartbeats from its first step to its last; a stop (activities/scheduler/taskStop.ts) ends it
      return keepAlive(
        () =>
          withTaskStop(deps, start.id, async (stop) => {
            // the local try's work goes on in this worker: its end is this start's, without a PostgreSQL poll
            const work = handedOver && attempt === 1 ? inFlight.take(start.id) : undefined;
            if (work) {
              const done = await untilStopped(work, stop.signal).catch((err: unknown) => {
                if (stop.signal.aborted || isTaskStopFailure(err)) throw err;
                return undefined; // it failed (a platform that could not be reached gave the task back): a try of our own
              });
              if (done !== undefined) return done;
            }
            return beginRunTry(start, stop, opts);
          }),
        { intervalMs: 1000 },
      );
    },

    /**
     * The run's start inside its first workflow task (patch `local-start`, docs/scheduler.md#local-start): beginRun's
     * work as a local activity, so a first flow's request leaves before that workflow task completes, with no activity
     * dispatch through Temporal first. It waits LOCAL_START_MS at most: what it learns by then (the run deleted, its
     * start, a first flow's answer) is its result. Past that, or when its try fails (a platform that cannot be reached
     * gives the task back first), it hands over: the work goes on in this worker (a request in flight gets its answer,
     * recorded as the task's outcome, with its log lines), and the workflow runs beginRun, which writes the same start
     * again and, for a first flow, claims the task, so it reports the outcome of the request this try sent (waiting for
     * it, or saying the answer is unknown when this worker is lost) or, when nothing was sent, sends it.
     * It claims under its own id (localTryId), never an activity's attempt. Local activities do not heartbeat.
     */
    async beginRunLocal(input: ExecutionStart): Promise<LocalStart> {
      const work = withTaskStop(deps, input.id, (stop) => beginRunTry(input, stop, { tryId: localTryId(), prefetched: true, lastTry: false, count: true }));
      let timer: NodeJS.Timeout | undefined;
      const handOver = new Promise<'handover'>((resolve) => {
        timer = setTimeout(() => resolve('handover'), LOCAL_START_MS);
      });
      try {
        const first = await Promise.race([work, handOver]);
        if (first !== 'handover') return { begun: first };
      } catch (err) {
        // a stop is the run's (the workflow records it); anything else is left to beginRun's tries
        if (!isTaskStopFailure(err)) {
          deps.logger.info({ executionId: input.id, err: { message: (err as Error).message } }, 'run start handed over to beginRun');
          return { handedOver: true };
        }
        throw err;
      } finally {
        clearTimeout(timer);
      }
      work.catch((err) => deps.logger.info({ executionId: input.id, err: { message: (err as Error).message } }, 'run start handed over to beginRun ended with an error'));
      inFlight.put(input.id, work);
      deps.workInHand?.track(work); // the worker's stop waits for it, when no beginRun of this worker does
      return { handedOver: true };
    },

    /**
     * The task states and the next log key of a run whose beginRun failed or was stopped before it returned (the
     * workflow does not know them): the row's states when it was written, else the definition's, all pending.
     */
    async loadRunState(input: { executionId: string; workflow: string }): Promise<{ states: TaskRunState[]; logLines: number }> {
      const row = await getExecution(deps.db, input.executionId);
      const { rows } = await deps.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM scheduler_execution_logs WHERE execution_id = $1 AND key LIKE 'w:%'`, [input.executionId]);
      const logLines = rows[0]?.n ?? 0;
      if (row?.tasks.length) return { states: row.tasks, logLines };
      const def = await getWorkflow(deps.db, input.workflow);
      const states: TaskRunState[] = (def?.tasks ?? []).map((t) => ({ name: t.name, type: t.type, status: 'pending', startedAt: null, completedAt: null, output: '' }));
      return { states, logLines };
    },

    /** Writes one state change: the row and its log lines. `exists: false` when the execution is gone. */
    async recordProgress(input: ExecutionRecord & { logs: LogLine[] }): Promise<{ exists: boolean }> {
      const { logs, ...row } = input;
      return { exists: (await write(row, logs)).exists };
    },
  };
}

/** How long a handed-over start's work is kept for its beginRun once it ended (beginRun ran on another worker, or never). */
const HANDED_OVER_TTL_MS = 60_000;

/**
 * The work of local tries that handed over, by execution id, in this worker: beginRun's first try, when it runs here,
 * takes its run's and awaits it, so the answer of a request in flight reaches the workflow as it arrives. On another
 * worker (or a retry) beginRun claims the task instead and learns the outcome from PostgreSQL (polled each second).
 */
function handedOverStarts() {
  const works = new Map<string, Promise<BegunRun | null>>();
  return {
    put(executionId: string, work: Promise<BegunRun | null>): void {
      works.set(executionId, work);
      const drop = () => setTimeout(() => works.get(executionId) === work && works.delete(executionId), HANDED_OVER_TTL_MS).unref();
      work.then(drop, drop);
    },
    take(executionId: string): Promise<BegunRun | null> | undefined {
      const work = works.get(executionId);
      works.delete(executionId);
      return work;
    },
  };
}

/** `work`'s outcome, or a rejection once `signal` aborts first (the caller's withTaskStop turns it into the stop). */
function untilStopped<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(new CancelledFailure('execution stopped'));
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(new CancelledFailure('execution stopped'));
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

/**
 * Whether `def`, read by the run's workflow name, is the workflow that started the run: the one with the run's
 * workflow id or, for a run that carries none (a schedule's from before runs carried it), one created before the run
 * was fired. A workflow created later under the name is another one, and the run must not become its run
 * (docs/scheduler.md#deleting). Compared in memory: no round trip before the first request.
 */
function startedBy(def: WorkflowRow, input: ExecutionStart): boolean {
  if (input.workflowId) return def.id === input.workflowId;
  return def.created_at.getTime() <= Date.parse(input.scheduledAt ?? input.startedAt);
}

/**
 * Lag of a jittered run, measured from the time Temporal meant to start it (the nominal time plus the schedule's
 * jitter offset: the action's `scheduledAt` in the Schedule's recent actions), so jitter does not count as lag.
 * Runs beside the execution, not before its first task; when the Schedule cannot tell, nothing is observed.
 */
async function observeJitteredLag(deps: ActivityDeps, metrics: SchedulerMetrics, scheduleId: string, run: ExecutionStart): Promise<void> {
  try {
    const client = Context.current().client;
    for (let i = 0; i < ACTION_LOOKUP_TRIES; i++) {
      const at = await actionScheduledAt(client, scheduleId, run.temporalWorkflowId);
      if (at) {
        metrics.lag.observe(Math.max(0, Date.parse(run.startedAt) - at.getTime()) / 1000);
        return;
      }
      await new Promise((r) => setTimeout(r, ACTION_LOOKUP_PAUSE_MS));
    }
    deps.logger.warn({ scheduleId, workflowId: run.temporalWorkflowId }, 'schedule lag not observed: the schedule does not list this run');
  } catch (err) {
    deps.logger.warn({ err: { message: (err as Error).message }, scheduleId }, 'schedule lag not observed');
  }
}
