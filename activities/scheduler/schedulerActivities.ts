/**
 * Activities of the workflow scheduler (service B): the execution projection (recordExecution, appendLog), the task
 * runners (runScript, runSourceFlow), the periodic source health check and execution retention.
 */
import fs from 'node:fs';
import { ApplicationFailure } from '@temporalio/common';
import {
  appendExecutionLogs,
  pruneExecutions as pruneExecutionRows,
  pruneStopRequests,
  upsertExecution,
  type ExecutionRecord,
  type ExecutionWrite,
  type ExecutionStatus,
  type LogLine,
} from '../../lib/db/schedulerExecutions';
import { allSources, getSource, recordSourceHealth, type RunSource } from '../../lib/db/schedulerSources';
import { markScheduleRan } from '../../lib/db/schedulerSchedules';
import { getWorkflow, type WorkflowTask } from '../../lib/db/schedulerWorkflows';
import { pruneTaskOutcomes, type TaskRunResult } from '../../lib/db/schedulerTaskOutcomes';
import { lazyEncryptionKey } from '../../lib/keys';
import { childEnv } from '../../lib/process/childEnv';
import { launchGroupProcess } from '../../lib/process/processGroup';
import { schedulerMetrics, type SchedulerMetrics } from '../../lib/scheduler/metrics';
import { PlatformError, PlatformUnreachable, checkHealth, runRemoteFlow } from '../../lib/scheduler/platforms';
import { sourceTarget } from '../../lib/scheduler/sourceTarget';
import { schedulerSettings } from '../../lib/scheduler/settings';
import type { ActivityDeps } from '../index';
import { keepAlive } from '../keepAlive';
import { untilPostgresAnswers } from '../untilPostgresAnswers';
import { makeScriptDir } from './scriptDirs';
import { claimTaskOrOutcome, failedNow, type Claim } from './taskOutcomes';
import { watchTaskStop, type TaskStop } from './taskStop';
import { untilAnswered } from './untilAnswered';
import { FOREIGN_KEY_VIOLATION, isPostgresUnavailable } from '../../lib/db/pool';
import { groupNice } from '../../lib/process/priority';

/** Output kept on a task (the logs hold more: TASK_HEAD_LINES and TASK_TAIL_LINES below). */
const MAX_OUTPUT = 64 * 1024;

export type { TaskRunResult };

function capped(buf: string): string {
  return buf.length > MAX_OUTPUT ? `${buf.slice(0, MAX_OUTPUT)}\n… (output truncated; see the execution logs)` : buf;
}

/** Lines of one task that may wait in memory while PostgreSQL is unreachable (each at most 8,192 characters). */
const MAX_HELD_LINES = 10_000;
/**
 * A task's log keeps its first TASK_HEAD_LINES lines and its last TASK_TAIL_LINES, with one line between them saying
 * how many were left out: a script printing without end (`yes`) filled the worker's memory faster than PostgreSQL took
 * the lines, and its execution's logs could not be answered.
 */
export const TASK_HEAD_LINES = 10_000;
export const TASK_TAIL_LINES = 1_000;
/** How long a task's end waits (heartbeating) for PostgreSQL to come back to take its last lines. */
const CLOSE_WAIT_MS = 60_000;

/**
 * Buffers log lines and writes them in batches, each with a stable key (`t<task>:<n>`), so a retry adds no duplicates.
 * With `after`, nothing is written before it settles (the execution row the lines belong to is being written); `stop`
 * (the try's stop: activities/scheduler/taskStop.ts) ends the wait for PostgreSQL at the end.
 * While PostgreSQL is unreachable a batch goes back to the front and is tried again on the next tick (up to
 * MAX_HELD_LINES wait; past that the newest are left out and a line says how many), and the task's end waits for it
 * up to CLOSE_WAIT_MS: a restart of PostgreSQL no longer loses the lines printed meanwhile. Other failures drop the
 * batch with a warning, as before.
 */
function logWriter(deps: ActivityDeps, executionId: string, taskIndex: number, stop: AbortSignal, after?: Promise<unknown>) {
  let seq = 0;
  let pending: LogLine[] = [];
  let leftOut = 0;
  let outage = false;
  let flushing: Promise<void> = after ? after.then(() => undefined, () => undefined) : Promise.resolve();
  const line = (level: LogLine['level'], message: string, ts = new Date().toISOString()): LogLine => ({ key: `t${taskIndex}:${seq++}`, ts, level, message: message.slice(0, 8192) });
  /** lines taken past the head (TASK_HEAD_LINES): the last TASK_TAIL_LINES of them, a ring from `tailStart` */
  let taken = 0;
  const tail: { level: LogLine['level']; message: string; ts: string }[] = [];
  let tailStart = 0;
  let tailDropped = 0;
  /** the kept tail, after a line saying how many went (written by close) */
  const flushTail = () => {
    if (!tail.length) return;
    const kept = [...tail.slice(tailStart), ...tail.slice(0, tailStart)];
    if (tailDropped) {
      const n = tailDropped.toLocaleString('en-US');
      pending.push(line('warning', `${n} line${tailDropped === 1 ? '' : 's'} left out here: a task's log keeps its first ${TASK_HEAD_LINES.toLocaleString('en-US')} and last ${TASK_TAIL_LINES.toLocaleString('en-US')} lines`, kept[0]?.ts));
    }
    for (const l of kept) pending.push(line(l.level, l.message, l.ts));
    tail.length = 0;
  };
  const flush = () => {
    flushing = flushing.then(async () => {
      const batch = pending;
      pending = [];
      if (!batch.length) return;
      try {
        await appendExecutionLogs(deps.db, executionId, batch);
        outage = false;
      } catch (err) {
        if (!isPostgresUnavailable(err)) {
          deps.logger.warn({ err: { message: (err as Error).message }, executionId }, 'writing execution logs failed');
          return;
        }
        pending = batch.concat(pending);
        if (!outage) deps.logger.warn({ err: { message: (err as Error).message }, executionId }, 'PostgreSQL unavailable: execution log lines wait in memory until it is back');
        outage = true;
      }
    });
    return flushing;
  };
  const timer = setInterval(() => void flush(), 250);
  return {
    add(level: LogLine['level'], message: string) {
      if (++taken > TASK_HEAD_LINES) {
        const l = { level, message: message.slice(0, 8192), ts: new Date().toISOString() };
        if (tail.length < TASK_TAIL_LINES) tail.push(l);
        else {
          tail[tailStart] = l;
          tailStart = (tailStart + 1) % TASK_TAIL_LINES;
          tailDropped++;
        }
        return;
      }
      // only while PostgreSQL is away: with it up, a fast script's lines all wait for their turn, as before
      if (outage && pending.length >= MAX_HELD_LINES) {
        leftOut++;
        return;
      }
      if (leftOut) {
        pending.push(line('warning', `${leftOut} line${leftOut === 1 ? '' : 's'} left out here: PostgreSQL was unavailable and ${MAX_HELD_LINES} lines of this task were already waiting`));
        leftOut = 0;
      }
      pending.push(line(level, message));
      if (pending.length >= 200 && !outage) void flush();
    },
    /** Writes what is left (waiting up to CLOSE_WAIT_MS for PostgreSQL); the caller heartbeats meanwhile (keepAlive). */
    async close() {
      clearInterval(timer);
      flushTail();
      await flush();
      if (!pending.length) return;
      const deadline = Date.now() + CLOSE_WAIT_MS;
      while (pending.length && Date.now() < deadline && !stop.aborted) {
        await new Promise((r) => setTimeout(r, 500));
        await flush();
      }
      if (pending.length) deps.logger.warn({ executionId, lines: pending.length }, 'execution log lines not written: PostgreSQL stayed unavailable');
      pending = [];
    },
  };
}

/** Counts an execution's move to a terminal status once, with its duration. */
export function countFinish(metrics: SchedulerMetrics, e: ExecutionRecord, previous: ExecutionStatus | undefined): void {
  if (e.status === 'running' || previous === e.status) return;
  metrics.executions.inc({ workflow: e.workflow, status: e.status });
  if (e.completedAt) metrics.duration.observe({ status: e.status }, Math.max(0, Date.parse(e.completedAt) - Date.parse(e.startedAt)) / 1000);
}

/** The run's input for a script: ARMADA_INPUT holds a string as it is and any other value as JSON; absent when none. */
function scriptInputVar(input: unknown): Record<string, string> {
  if (input === undefined || input === null) return {};
  return { ARMADA_INPUT: typeof input === 'string' ? input : JSON.stringify(input) };
}

export interface ScriptTaskInput {
  executionId: string;
  taskIndex: number;
  script: string;
  timeoutSeconds: number | null;
  input?: unknown;
}

export interface FlowTaskInput {
  executionId: string;
  taskIndex: number;
  source: string;
  flow: string;
  input: unknown;
  timeoutSeconds: number | null;
}

/** What a try of a script task that finds an earlier try lost reports: scripts are not idempotent, so it is not run again. */
export const LOST_SCRIPT_ERROR = 'the worker running the script was lost; the script is not run again (it may have run in part or to its end)';
/** What a script cut short by its worker's shutdown reports (to the next try). */
const SHUTDOWN_SCRIPT_ERROR = 'the worker shut down while the script ran and stopped it; the script is not run again';

/** What a try of a flow task that finds an earlier try lost reports: the request may have left, so it is not sent again. */
export const LOST_FLOW_ERROR =
  'the worker running this task was lost after its request may have been sent; the answer is unknown, and the flow is not sent again (it could run twice)';

/** Claims a flow task for this try, or the outcome an earlier try reached (activities/scheduler/taskOutcomes.ts). */
export function claimFlowTask(deps: ActivityDeps, input: { executionId: string; taskIndex: number }, signal: AbortSignal, tryId?: number): Promise<Claim> {
  return claimTaskOrOutcome(deps, { executionId: input.executionId, taskIndex: input.taskIndex }, signal, () => failedNow(LOST_FLOW_ERROR), tryId);
}

/**
 * Sends a flow task's run request to its source (loaded by the caller) and waits for the answer; the caller
 * heartbeats for the whole activity (keepAlive) and watches for its stop (`stop`, activities/scheduler/taskStop.ts).
 * The request leaves only once `claim` holds the task for this try: when an earlier try already sent it, its outcome
 * is the result and nothing is sent (docs/scheduler.md#task-outcomes). An HTTP answer or a timeout is the task's
 * result, recorded before the log lines are written; a platform that could not be reached gives the task back and
 * throws a retryable PlatformUnreachable, unless `lastTry` (the caller's last attempt) or this is the task's
 * `maxTries`-th try by the tries that gave it back before (counted in its row, whichever activity made them), when it
 * is the task's (failed) result too. `rowWritten`: the execution row is still being written; the task's log lines
 * wait for it.
 */
export async function runFlowTask(
  deps: ActivityDeps,
  encryptionKey: Buffer,
  input: FlowTaskInput,
  source: RunSource | undefined,
  opts: { lastTry: boolean; maxTries?: number; claim: Promise<Claim>; stop: TaskStop; rowWritten?: Promise<unknown> },
): Promise<TaskRunResult> {
  const claim = await opts.claim;
  if (claim.kind === 'outcome') return claim.result;
  const { holder } = claim;
  const lastTry = opts.lastTry || (opts.maxTries !== undefined && claim.givenBack + 1 >= opts.maxTries);
  const logs = logWriter(deps, input.executionId, input.taskIndex, opts.stop.signal, opts.rowWritten);
  try {
    const result = await sendFlow(deps, encryptionKey, input, source, logs, { lastTry, stop: opts.stop });
    await holder.record(result);
    return result;
  } catch (err) {
    if (err instanceof ApplicationFailure && err.type === PLATFORM_UNREACHABLE) await holder.release();
    throw err;
  } finally {
    holder.stop();
    await logs.close();
  }
}

const PLATFORM_UNREACHABLE = 'PlatformUnreachable';

async function sendFlow(
  deps: ActivityDeps,
  encryptionKey: Buffer,
  input: FlowTaskInput,
  source: RunSource | undefined,
  logs: ReturnType<typeof logWriter>,
  opts: { lastTry: boolean; stop: TaskStop },
): Promise<TaskRunResult> {
  const settings = schedulerSettings(deps.config);
  const startedAt = new Date().toISOString();
  const done = (ok: boolean, output: string, error?: string): TaskRunResult => ({ ok, output: capped(output), error, startedAt, completedAt: new Date().toISOString() });
  if (!source) return done(false, '', 'Source not found');
  if (source.status !== 'active') return done(false, '', `source ${source.name} is inactive`);
  logs.add('info', `POST flow ${input.flow} on source ${source.name}`);
  let output: string;
  try {
    const r = await runRemoteFlow(
      sourceTarget(source, encryptionKey),
      input.flow,
      input.input,
      input.timeoutSeconds ? input.timeoutSeconds * 1000 : settings.scriptTimeoutMs,
      opts.stop.signal,
    );
    output = answerOutput(r.body);
  } catch (err) {
    if (opts.stop.signal.aborted) throw opts.stop.failure();
    const e = err as Error;
    // the platform's own words (e.g. {"detail":"Invalid or missing API key"}) are in the message
    logs.add('error', e.message);
    // Sent again only when the platform could not be reached at all, and not after the caller's last try. An answer
    // (any HTTP status), a timeout (the platform may be running it) and anything that failed once the answer came
    // are final: the flow may have run, and sending it again could run it twice.
    if (!(e instanceof PlatformUnreachable) || opts.lastTry) return done(false, '', e.message);
    throw ApplicationFailure.retryable(e.message, PLATFORM_UNREACHABLE);
  }
  logs.add('info', output.slice(0, 8192));
  return done(true, output);
}

/** A flow's answer as the task's output; an answer that cannot be written out is the task's failure (final). */
function answerOutput(body: unknown): string {
  try {
    return typeof body === 'string' ? body : JSON.stringify(body);
  } catch (err) {
    throw new PlatformError(`the platform's answer could not be read: ${(err as Error).message}`);
  }
}

/**
 * Runs `work` with the try's stop watched (activities/scheduler/taskStop.ts): once the try is stopped, what it throws
 * is the stop's failure (a cancellation, or a non-retryable ExecutionStopped the run records as stopped).
 */
export async function withTaskStop<T>(deps: ActivityDeps, executionId: string, work: (stop: TaskStop) => Promise<T>): Promise<T> {
  const stop = watchTaskStop(deps, executionId);
  try {
    return await work(stop);
  } catch (err) {
    if (stop.signal.aborted) throw stop.failure();
    throw err;
  } finally {
    stop.dispose();
  }
}

export function createSchedulerActivities(deps: ActivityDeps) {
  const metrics = schedulerMetrics(deps.metrics);
  const settings = schedulerSettings(deps.config);
  const key = lazyEncryptionKey(deps.config);

  /**
   * runScript's try: claims the task (a try that finds it claimed reports the earlier try's outcome and runs nothing,
   * docs/scheduler.md#task-outcomes), then runs the bash script in its own temp dir and process group until it ends
   * or the try is stopped (the whole group killed), records the outcome, then writes the last log lines.
   */
  async function runScriptTask(input: ScriptTaskInput, stop: TaskStop): Promise<TaskRunResult> {
    const claim = await claimTaskOrOutcome(deps, { executionId: input.executionId, taskIndex: input.taskIndex }, stop.signal, () => failedNow(LOST_SCRIPT_ERROR));
    if (claim.kind === 'outcome') return claim.result;
    const { holder } = claim;
    const startedAt = new Date().toISOString();
    const dir = makeScriptDir(); // named after this process: a worker removes it if this one is killed (scriptDirs.ts)
    const logs = logWriter(deps, input.executionId, input.taskIndex, stop.signal);
    let output = '';
    const timeoutMs = input.timeoutSeconds ? input.timeoutSeconds * 1000 : settings.scriptTimeoutMs;
    try {
      const proc = await launchGroupProcess({
        command: 'bash',
        args: ['-c', input.script],
        cwd: dir,
        env: childEnv({ vars: { ARMADA_EXECUTION_ID: input.executionId, ARMADA_TASK_INDEX: String(input.taskIndex), ...scriptInputVar(input.input) } }),
        signal: stop.signal,
        graceMs: 2000,
        timeoutMs,
        nice: groupNice(deps.config),
        onLine: (stream, line) => {
          if (output.length <= MAX_OUTPUT) output += `${line}\n`;
          logs.add(stream === 'stderr' ? 'error' : 'info', line);
        },
      });
      const r = await proc.done;
      const completedAt = new Date().toISOString();
      const result = (ok: boolean, error?: string): TaskRunResult => ({ ok, output: capped(output), ...(error !== undefined ? { error } : {}), startedAt, completedAt });
      if (r.aborted) {
        // cut short by the worker's shutdown: the next try reports it instead of waiting for this one (one attempt)
        if (stop.byShutdown) await holder.record(result(false, SHUTDOWN_SCRIPT_ERROR)).catch(() => false);
        throw stop.failure();
      }
      let outcome: TaskRunResult;
      if (r.spawnError) outcome = result(false, `could not start bash: ${r.spawnError}`);
      else if (r.timedOut) outcome = result(false, `timed out after ${timeoutMs / 1000}s`);
      else if (r.code !== 0) outcome = result(false, r.signal ? `killed by ${r.signal}` : `exit code ${r.code}`);
      else outcome = result(true);
      await holder.record(outcome); // before the last log lines: their write may stall, the outcome stands
      return outcome;
    } finally {
      holder.stop();
      await logs.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }

  return {
    async loadWorkflowDefinition(input: { workflow: string }): Promise<{ tasks: WorkflowTask[] } | null> {
      const w = await getWorkflow(deps.db, input.workflow);
      return w ? { tasks: w.tasks } : null;
    },

    /**
     * Upserts the execution row (runs from before the lean run; upsertExecution decides whose row it is);
     * `exists: false` when its workflow was deleted meanwhile. Counts each transition once.
     */
    async recordExecution(input: ExecutionRecord & { first?: boolean }): Promise<{ exists: boolean }> {
      let written: ExecutionWrite | undefined;
      // a foreign-key violation is a link a concurrent deletion removed: written once more without it, as the lean
      // run's write does (executionProgress.ts)
      for (let attempt = 1; !written; attempt++) {
        try {
          written = await upsertExecution(deps.db, input);
        } catch (err) {
          if ((err as { code?: string }).code !== FOREIGN_KEY_VIOLATION) throw err;
          if (attempt >= 2) return { exists: false };
        }
      }
      if (written.outcome === 'gone') return { exists: false };
      // a one-time schedule is complete once its run started (idempotent: the first time wins)
      if (input.first && input.scheduleId) await markScheduleRan(deps.db, input.scheduleId, input.startedAt);
      if (written.outcome === 'written') {
        if (input.first) {
          metrics.executions.inc({ workflow: input.workflow, status: 'started' });
          if (input.scheduledAt) metrics.lag.observe(Math.max(0, Date.parse(input.startedAt) - Date.parse(input.scheduledAt)) / 1000);
        }
        countFinish(metrics, input, written.previous);
      }
      return { exists: true };
    },

    async appendLog(input: { executionId: string; key: string; ts: string; level: LogLine['level']; message: string }): Promise<void> {
      try {
        await appendExecutionLogs(deps.db, input.executionId, [{ key: input.key, ts: input.ts, level: input.level, message: input.message }]);
      } catch (err) {
        if ((err as { code?: string }).code !== FOREIGN_KEY_VIOLATION) throw err; // the execution was pruned or deleted
      }
    },

    /** Runs a bash script in its own temp dir and process group; a stop (cancellation) kills the whole group. */
    async runScript(input: ScriptTaskInput): Promise<TaskRunResult> {
      // heartbeats from its first step to its last (the last log lines' write included)
      return keepAlive(() => withTaskStop(deps, input.executionId, (stop) => runScriptTask(input, stop)), { intervalMs: 1000 });
    },

    /** Runs a flow on a source. An HTTP answer is the task's result; a platform that cannot be reached is retried. */
    async runSourceFlow(input: FlowTaskInput): Promise<TaskRunResult> {
      // heartbeats from its first step to its last: a stall anywhere (loading the source, writing the outcome or the
      // log lines) is a slow try, not a lost one
      return keepAlive(
        () =>
          withTaskStop(deps, input.executionId, async (stop) => {
            const claim = claimFlowTask(deps, input, stop.signal);
            claim.catch(() => undefined); // awaited by runFlowTask; a stop ends both
            const source = await untilAnswered(deps.logger, 'load source', stop.signal, () => getSource(deps.db, input.source));
            return runFlowTask(deps, key(), input, source, { lastTry: false, claim, stop });
          }),
        { intervalMs: 1000 },
      );
    },

    /** Checks every source's health, records it on the row (status follows it) and on the gauge. */
    async checkSourcesHealth(): Promise<{ checked: number; healthy: number }> {
      const sources = await untilPostgresAnswers(() => allSources(deps.db));
      let healthy = 0;
      await Promise.all(
        sources.map(async (s) => {
          let error: string | null = null;
          try {
            await checkHealth(sourceTarget(s, key()), settings.sourceTimeoutMs);
            healthy++;
          } catch (err) {
            error = (err as Error).message;
          }
          // not recorded when the source was changed (or deleted) while it was checked: the result is of what it was
          const recorded = await untilPostgresAnswers(() => recordSourceHealth(deps.db, s.id, error === null, error, s));
          if (recorded) metrics.sourceHealthy.set({ source: recorded.name, source_type: recorded.source_type }, error === null ? 1 : 0);
        }),
      );
      return { checked: sources.length, healthy };
    },

    /** Retention: deletes finished executions older than the configured age. */
    async pruneExecutions(): Promise<{ deleted: number }> {
      const olderThan = new Date(Date.now() - settings.retentionMs);
      await untilPostgresAnswers(() => pruneTaskOutcomes(deps.db, olderThan));
      await untilPostgresAnswers(() => pruneStopRequests(deps.db, olderThan));
      return { deleted: await untilPostgresAnswers(() => pruneExecutionRows(deps.db, olderThan)) };
    },
  };
}
