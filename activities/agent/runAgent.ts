/**
 * runAgent: one agent process in the attempt's worktree, in its own process group. Output is parsed into log rows
 * (appended in batches), progress/tokens/resources go to the process row. It heartbeats; a Temporal cancellation (not
 * the one of a try Temporal merely timed out: activities/agent/runsInProgress.ts),
 * or the process/attempt row moving to stopped/cancelled (the API's stop and cancel), stops the whole group.
 */
import { CancelledFailure, Context } from '@temporalio/activity';
import type { Pool } from 'pg';
import type { ArmadaConfig } from '../../lib/config';
import { isPostgresUnavailable, withTransaction } from '../../lib/db/pool';
import { UNIQUE_VIOLATION } from '../../lib/db/projects';
import {
  recordResourceSample,
  appendLogs,
  getProcess,
  insertProcess,
  releaseProcessPid,
  setProcessExit,
  setProcessLive,
  type LogEntry,
  type ProcessProgress,
  type ProcessRow,
} from '../../lib/db/processes';
import type { Logger } from '../../lib/logger';
import { attemptMetrics } from '../../lib/attempts/metrics';
import { publishProcessEvent, recordAttemptCancelled, recordProcessEnded, recordProcessStarted } from '../../lib/attempts/projections';
import type { Metrics } from '../../lib/metrics';
import type { WorkerIdentity } from '../../lib/workerIdentity';
import type { Slots } from '../../lib/process/slots';
import { resetWorktree } from '../git/resetWorktree';
import { childEnv, envValueThatFits } from '../../lib/process/childEnv';
import { faultPoint, type Faults } from '../../lib/faults';
import { groupAlive, groupStartedWith, killProcessesUnder, launchGroupProcess, type GroupProcess, type GroupProcessResult } from '../../lib/process/processGroup';
import { createFinalMessage, createParser, type ParsedLine, textParser } from './parsers';
import { resolveAgentProfile, type AgentProfile } from '../../lib/agents/profiles';
import { createGroupSampler } from './resourceSampler';
import { createLogSink, type LogSink } from '../../lib/attempts/logSink';
import { queueLiveState, settleLiveState } from '../../lib/attempts/liveState';
import { processWatch } from './processWatch';
import { keepAlive } from '../keepAlive';
import { runsInProgress, type TryOutcome } from './runsInProgress';
import { untilPostgresAnswers } from '../untilPostgresAnswers';
import { groupNice } from '../../lib/process/priority';
import { closedRun, closedRunText, type ClosedRun } from '../../lib/temporal/closedRun';

/** An attempt's output summary is cut to its last 64 KiB (like multi-agent results). */
const SUMMARY_MAX_BYTES = 64 * 1024;

export interface RunAgentInput {
  attemptId: string;
  taskId: string;
  processId: string;
  llm: string;
  kind: 'initial' | 'follow_up';
  prompt: string;
  worktreePath: string;
  timeoutMs: number;
  /** when the start was requested (queue-wait metric) */
  requestedAt?: string;
  /**
   * Commit the agent's changes and record the attempt's outcome once the agent ended (agent-run-records-outcome):
   * done by the activity (activities/attempts.ts), not by runAgent itself.
   */
  record?: { repoPath: string; baseCommit: string; message: string };
}

export interface RunAgentResult {
  status: 'completed' | 'failed' | 'stopped' | 'cancelled';
  exitCode: number | null;
  error: string | null;
  summary: string;
  sessionId: string | null;
  /** the attempt's recorded outcome, when the input asked for it (`record`) and the run was not cancelled */
  outcome?: 'completed' | 'failed';
  /**
   * A later try of this run took it over (on another worker, while this one was paused): this try's end is not the
   * run's, so it records nothing, neither the process row nor (with `record`) a commit or the attempt's outcome.
   */
  takenOver?: true;
}

export interface RunAgentDeps {
  db: Pool;
  config: ArmadaConfig;
  logger: Logger;
  metrics: Metrics;
  worker?: WorkerIdentity;
  agentSlots?: Slots;
  /** test-only failure points (lib/faults.ts) */
  faults?: Faults;
}

/** live state (progress, tokens) is written this often; log lines go out sooner, through the log sink */
const FLUSH_MS = 200;
const WATCH_MS = 500;
const SAMPLE_MS = 2000;
/** How long a run that failed while its agent ran waits for its last lines' insert before giving the error back. */
const FAILED_RUN_FLUSH_MS = 5000;
/** Kept after the agent's run for recording it, when the prepare phase waits for PostgreSQL. */
const RECORD_RESERVE_MS = 60_000;
/** How long a try told "not found" by Temporal waits for the answer whether its workflow is still open. */
const WORKFLOW_STATE_TIMEOUT_MS = 3000;

/**
 * One agent run in three phases: prepare (process row, a lost run's leftovers, the agent and worker slots), run
 * (the process with its live updates) and record (outcome, metrics, the process row). Whatever is thrown after the
 * worker slot is taken releases it, and whatever is thrown after the spawn also stops the process group, so a
 * failed try never leaves a slot taken or an agent editing the worktree while Temporal retries.
 */
export async function runAgent(deps: RunAgentDeps, input: RunAgentInput): Promise<RunAgentResult> {
  const runs = runsInProgress<RunAgentResult>(deps.db);
  const earlier = runs.current(input.processId);
  const thisTry = runs.begin(input.processId, Context.current().info.attempt);
  try {
    if (earlier) {
      const result = await awaitEarlierTry(deps, input, earlier);
      if (result) {
        thisTry.recorded(result);
        return result;
      }
    }
    // nothing of the prepare phase needs undoing before the agent starts: a PostgreSQL outage is waited out here (the
    // phase runs again once it answers), leaving the agent's whole run and its recording before the activity's deadline
    const prepared = await untilPostgresAnswers(() => prepareRun(deps, input), { reserveMs: input.timeoutMs + RECORD_RESERVE_MS });
    if (!('profile' in prepared)) {
      thisTry.recorded(prepared);
      return prepared;
    }
    try {
      const run = await runProcess(deps, input, prepared);
      const result = await recordRun(deps, input, prepared, run);
      // recorded in the process row: a retry of this run waiting in this worker takes it, even when Temporal will
      // reject this try's own completion (it timed the try out). Not a taken-over try's end, which is not the run's: a
      // retry waiting for it goes on as for a lost run
      if (!result.takenOver) thisTry.recorded(result);
      if (Context.current().cancellationSignal.aborted) throw new CancelledFailure('agent run cancelled');
      return result;
    } catch (err) {
      if (!(err instanceof CancelledFailure)) {
        prepared.log('error', `agent run failed: ${(err as Error).message}`);
        await appendLogs(deps.db, input.processId, input.attemptId, prepared.pending.splice(0)).catch(() => undefined);
      }
      throw err;
    } finally {
      prepared.releaseSlot();
    }
  } finally {
    thisTry.settle();
  }
}

/**
 * A retry that came to the worker process where an earlier try of the same run is still in progress: Temporal timed
 * that try out because it missed its heartbeats (the worker was paused: SIGSTOP, a frozen VM), but its agent went on
 * or has already finished. This try waits for it, heartbeating, and returns what it recorded, so the agent is not
 * started again and its changes are not discarded (the commit after runAgent takes them). Undefined when the earlier
 * try recorded no end (it failed before its agent ran, was stopped by a worker shutdown, or a try on another worker
 * took its run over): the run then goes on as a lost one.
 */
async function awaitEarlierTry(deps: RunAgentDeps, input: RunAgentInput, earlier: TryOutcome<RunAgentResult>): Promise<RunAgentResult | undefined> {
  const attempt = Context.current().info.attempt;
  const note = (level: LogEntry['level'], message: string) =>
    // a lost line costs less than a failed try (its retry would start the agent again)
    appendLogs(deps.db, input.processId, input.attemptId, [{ level, message, timestamp: new Date().toISOString(), source: 'armada' }]).catch(() => undefined);
  await note('warn', `activity attempt ${earlier.attempt} of this run, timed out by Temporal (missed heartbeats), is still in progress in this worker: activity attempt ${attempt} waits for it instead of starting the agent again`);
  const result = await keepAlive(() => earlier.settled);
  if (!result) return undefined;
  // not in the run's log: the earlier try has recorded the run's end, and a line stored after it is one a follower
  // never gets (the log streams end with the process; the chaos soak's followers missed it)
  deps.logger.info(
    { processId: input.processId, attemptId: input.attemptId },
    `the run of activity attempt ${earlier.attempt} ended ${result.status}${result.exitCode === null ? '' : ` (exit ${result.exitCode})`}; activity attempt ${attempt} reports it`,
  );
  return result;
}

interface PreparedRun {
  profile: AgentProfile;
  /** log rows not yet written, and how to add one */
  pending: LogEntry[];
  log: (level: LogEntry['level'], message: string, source?: string) => void;
  releaseSlot: () => void;
}

/** The process row, a lost earlier try cleaned up, the agent's fleet slot and this worker's slot; or the result of a run that ends here. */
async function prepareRun(deps: RunAgentDeps, input: RunAgentInput): Promise<PreparedRun | RunAgentResult> {
  const profile = resolveAgentProfile(deps.config, input.llm);
  await faultPoint(deps.faults, 'runAgent.beforeInsert', { attemptId: input.attemptId, processId: input.processId, kind: input.kind });
  // the row as it is now: new, or as an earlier try (or a stop before the start) left it
  const before = await insertProcess(deps.db, {
    id: input.processId,
    attemptId: input.attemptId,
    taskId: input.taskId,
    llm: input.llm,
    model: profile?.model ?? null,
    kind: input.kind,
    prompt: input.prompt,
  });
  // stopped or cancelled before it started (or a retry of a run that already ended)
  if (before.status !== 'running') return endedBeforeStart(before.status, before);
  const pending: LogEntry[] = [];
  const log = (level: LogEntry['level'], message: string, source = 'armada') => void pending.push({ level, message, timestamp: new Date().toISOString(), source });
  try {
    await cleanUpLostRun(deps, input, before.pid ?? null, log);
  } catch (err) {
    // the worktree could not be reset: this try ends before the agent starts, its lines saying why
    log('error', (err as Error).message);
    await appendLogs(deps.db, input.processId, input.attemptId, pending.splice(0)).catch(() => undefined);
    throw err;
  }
  if (!profile) {
    log('error', `unknown agent "${input.llm}"`);
    await appendLogs(deps.db, input.processId, input.attemptId, pending);
    await recordProcessEnded(deps.db, input.processId, 'failed', null, `unknown agent "${input.llm}"`);
    return { status: 'failed', exitCode: null, error: `unknown agent "${input.llm}"`, summary: '', sessionId: null };
  }
  if (profile.maxConcurrent) {
    const outcome = await waitForAgentSlot(deps, input, profile.maxConcurrent);
    if (outcome) return outcome;
  }
  const releaseSlot = await waitForWorkerSlot(deps, input);
  if (typeof releaseSlot !== 'function') return releaseSlot;
  // the row once more, just before the agent starts: a cancel or stop that came after the insert (while the run
  // cleaned up or waited for a slot) ends it here, and no agent is started for a cancelled attempt (outside round seven)
  let now: ProcessRow | undefined;
  try {
    await faultPoint(deps.faults, 'runAgent.beforeSpawn', { attemptId: input.attemptId, processId: input.processId, kind: input.kind });
    now = await getProcess(deps.db, input.processId);
  } catch (err) {
    releaseSlot();
    throw err;
  }
  if (now && now.status !== 'running') {
    releaseSlot();
    return endedBeforeStart(now.status, now);
  }
  return { profile, pending, log, releaseSlot };
}

/** The result of a run whose row had ended before its agent started (stopped, cancelled, or an earlier try's end). */
function endedBeforeStart(status: Exclude<ProcessRow['status'], 'running'>, row: Pick<ProcessRow, 'exit_code' | 'error'>): RunAgentResult {
  return { status, exitCode: row.exit_code, error: row.error, summary: '', sessionId: null };
}

/**
 * An earlier try may have started an agent here and never finished (its worker was lost), possibly before its pid
 * was recorded. Any process of that run (started with its ARMADA_PROCESS_ID) still working in the worktree is
 * killed, and nothing else there (a user's shell or editor), and whatever it left uncommitted is discarded,
 * so the retried run starts from the tree as last committed and its changes are made exactly once. A reset git
 * refuses throws (activities/git/resetWorktree.ts): the agent is not started on the lost run's tree. The recorded
 * pid's group is killed only while it is still the lost run's (a process of it carries this run's
 * ARMADA_PROCESS_ID): the agent may be long gone and its pid reused by another process.
 */
async function cleanUpLostRun(deps: RunAgentDeps, input: RunAgentInput, lostPid: number | null, log: PreparedRun['log']): Promise<void> {
  const attempt = Context.current().info.attempt;
  const lostGroupAlive = !!lostPid && groupAlive(lostPid);
  if (lostPid && lostGroupAlive && groupStartedWith(lostPid, 'ARMADA_PROCESS_ID', input.processId)) {
    // the row first stops naming the lost agent: a try of it that still runs (timed out by Temporal while its worker
    // could not heartbeat: a frozen Temporal, a cut connection) sees its agent killed at once and would otherwise record
    // that kill as the run's end (`agent exited with code SIGKILL`, the attempt failed) before this try starts the next.
    // The kill's line goes with the release, so it comes before that try's note that it was taken over (the note is
    // written only once the row no longer names its agent), in the order things happened; before, it waited in this
    // try's queue until its agent started and usually came after the note
    await releaseLostAgent(deps, input, lostPid);
    try {
      process.kill(-lostPid, 'SIGKILL');
    } catch {
      /* gone */
    }
  } else if (lostGroupAlive) {
    log('warn', `the pid recorded for the lost run (${lostPid}) now names another process, which is left alone; agent run restarted (activity attempt ${attempt})`);
  } else if (attempt > 1) {
    log('warn', `agent run restarted (activity attempt ${attempt})`);
  }
  if (!lostPid && attempt <= 1) return;
  // only the lost run's (its processes carry its ARMADA_PROCESS_ID): a user's shell or editor in the worktree stays
  const orphans = killProcessesUnder(input.worktreePath, { startedWith: { name: 'ARMADA_PROCESS_ID', value: input.processId } });
  if (orphans.length) log('warn', `killed ${orphans.length} process(es) a lost run left in the worktree`);
  await faultPoint(deps.faults, 'runAgent.beforeReset', { attempt, processId: input.processId, worktreePath: input.worktreePath });
  // a stale lock of a git the lost run left (killed with it) is removed first, said in the run's log
  await resetWorktree(input.worktreePath, (message) => log('warn', message));
  log('warn', 'uncommitted changes of the lost run were discarded; the agent starts again from the last commit');
}

/**
 * The kill's line and the row's release of the lost agent, in one transaction. The lost try may still be storing its
 * agent's lines (one not paused, only cut off from Temporal): an insert of its that took the same seq makes this one
 * fail on the key, and it is tried again after it.
 */
async function releaseLostAgent(deps: RunAgentDeps, input: RunAgentInput, lostPid: number): Promise<void> {
  const line: LogEntry = { level: 'warn', message: `previous agent run (pid ${lostPid}) was left by a lost worker; killing it and restarting`, timestamp: new Date().toISOString(), source: 'armada' };
  for (let tries = 1; ; tries++) {
    try {
      await withTransaction(deps.db, async (c) => {
        await appendLogs(c, input.processId, input.attemptId, [line]);
        await releaseProcessPid(c, input.processId, lostPid);
      });
      return;
    } catch (err) {
      if ((err as { code?: string }).code !== UNIQUE_VIOLATION || tries >= 5) throw err;
    }
  }
}

/** What the agent's output said, parsed line by line. */
interface AgentOutput {
  lines: number;
  tokens?: { input: number; output: number };
  reportedCost?: number;
  progress?: Partial<ProcessProgress>;
  summary: string;
  sessionId: string | null;
  finalMessage: ReturnType<typeof createFinalMessage>;
}

/**
 * Why the agent was stopped before its own end: the process stopped or the attempt cancelled (the run's end), or
 * this worker shutting down past its grace period (`shutdown`: not the run's end, a later try runs it again).
 */
type StopReason = 'stopped' | 'cancelled' | 'shutdown';

interface ProcessRun {
  result: GroupProcessResult;
  stopReason: StopReason | null;
  output: AgentOutput;
  /**
   * writes pending logs and live state; resolves when everything queued so far is written (the logs: or
   * FAILED_RUN_FLUSH_MS after the run's cancellation, while PostgreSQL does not take them)
   */
  flush: (logs?: boolean) => Promise<void>;
  /** takes back this try's `Temporal timed this try out` line while it is not yet stored (a later try took the run over) */
  withdrawTimedOutLine: () => void;
  /** the workflow was closed from Temporal's side (terminated, …) while the agent ran: the agent was stopped for it */
  workflowClosed?: ClosedRun;
}

function collectOutput(profile: AgentProfile, pending: LogEntry[]): { output: AgentOutput; onLine: (stream: 'stdout' | 'stderr', line: string) => void } {
  const parser = createParser(profile.format);
  // the parser's summary is the agent's own final answer (e.g. Claude's result event); without one, the last message
  const output: AgentOutput = { lines: 0, summary: '', sessionId: null, finalMessage: createFinalMessage(profile.format, SUMMARY_MAX_BYTES) };
  const text = textParser();
  const onLine = (stream: 'stdout' | 'stderr', line: string) => {
    output.lines++;
    let parsed: ParsedLine;
    try {
      parsed = parser.line(stream, line);
    } catch {
      // a line the format's parser cannot read (a shape no version of the agent was seen to print) is kept as text:
      // this runs in a stream handler, where a throw would end the worker
      parsed = text.line(stream, line);
    }
    if (stream === 'stdout') output.finalMessage.line(line);
    pending.push(...parsed.entries);
    if (parsed.tokens) output.tokens = parsed.tokens;
    if (parsed.cost !== undefined) output.reportedCost = parsed.cost;
    const current = parsed.progress?.current ?? parsed.entries.at(-1)?.message.slice(0, 200) ?? '';
    if (parsed.progress) output.progress = { ...output.progress, ...parsed.progress, current };
    else if (parsed.entries.length) output.progress = { ...output.progress, current };
    if (parsed.summary) output.summary = parsed.summary;
    if (parsed.sessionId) output.sessionId = parsed.sessionId;
  };
  return { output, onLine };
}

const costOf = (profile: AgentProfile, o: AgentOutput) =>
  o.reportedCost ?? (o.tokens && profile.prices ? (o.tokens.input * profile.prices.inputPerMTok + o.tokens.output * profile.prices.outputPerMTok) / 1e6 : 0);

/** Spawns the agent in its own process group and waits for it; an error after the spawn stops the group. */
async function runProcess(deps: RunAgentDeps, input: RunAgentInput, prep: PreparedRun): Promise<ProcessRun> {
  const m = attemptMetrics(deps.metrics.registry);
  const { profile } = prep;
  const { output, onLine } = collectOutput(profile, prep.pending);
  const sink = createLogSink({ db: deps.db, processId: input.processId, attemptId: input.attemptId, queue: prep.pending, logger: deps.logger });
  const argv = input.kind === 'follow_up' ? profile.resumeCommand : profile.command;
  // started from the process launcher: forking this worker for every agent cost milliseconds of its event loop
  const proc = await launchGroupProcess({
    command: argv[0] as string,
    args: argv.slice(1),
    cwd: input.worktreePath,
    env: childEnv({
      profileEnv: profile.env,
      vars: {
        // left out when it does not fit in one environment string (a long follow-up): stdin always has all of it
        ARMADA_PROMPT: envValueThatFits('ARMADA_PROMPT', input.prompt),
        ARMADA_TASK_ID: input.taskId,
        ARMADA_ATTEMPT_ID: input.attemptId,
        ARMADA_PROCESS_ID: input.processId,
        ARMADA_WORKTREE: input.worktreePath,
        ARMADA_MODEL: profile.model ?? undefined,
      },
    }),
    stdin: input.prompt,
    graceMs: deps.config.file.attempts?.killGraceMs ?? 2000,
    timeoutMs: input.timeoutMs,
    nice: groupNice(deps.config),
    onLine: (stream, line) => {
      onLine(stream, line);
      sink.poke();
    },
  });
  m.running.inc({ llm: input.llm });
  if (input.requestedAt) m.queueWait.observe({ llm: input.llm }, Math.max(0, (Date.now() - Date.parse(input.requestedAt)) / 1000));
  let ended = false;
  const cancel = runCancellation(prep, proc.pid, sink);
  const watch = watchRun(deps, input, prep, proc, output, sink, cancel.signal);
  try {
    // the agent runs: an outage is waited out, since a failed try would stop it and the retry would run it again
    await untilPostgresAnswers(() => recordProcessStarted(deps.db, input.processId, proc.pid, input.kind, deps.worker));
    await faultPoint(deps.faults, 'runAgent.afterSpawn', { pid: proc.pid, processId: input.processId });
    const result = await proc.done;
    ended = true;
    return { result, stopReason: watch.stopReason(), output, flush: watch.flush, withdrawTimedOutLine: cancel.withdrawTimedOutLine, workflowClosed: cancel.workflowClosed() };
  } finally {
    watch.stop();
    cancel.dispose();
    m.running.dec({ llm: input.llm });
    sink.close();
    if (!ended) {
      // thrown while the agent runs: it must not outlive this try (the retry would run a second agent beside it)
      await proc.stop('abort');
      await proc.done;
      // before the caller appends its own line (one writer at a time); not waiting long for a PostgreSQL that is away,
      // and a little also when the run was cancelled (its lines are what tell how it ended)
      await sink.flush(AbortSignal.timeout(FAILED_RUN_FLUSH_MS));
    }
  }
}

/**
 * Temporal's cancellation of this try, but for the one that says only that Temporal no longer knows the try: it timed
 * the try out because the worker missed its heartbeats (paused by SIGSTOP, a frozen VM). That one stops nothing: the
 * agent goes on, its end is recorded, and a retry that comes to this worker waits for it (awaitEarlierTry) instead of
 * running the agent again. The attempt's cancel and the process's stop still reach the run through its rows
 * (processWatch), a worker shutdown through this signal. The same "not found" comes when the workflow was closed from
 * Temporal's side (`temporal workflow terminate`, its UI, a reset with no run after it): Temporal is asked
 * (workflowClosed), and a closed workflow's agent is stopped as by a cancel (before session 48 it ran on to its end or
 * its timeout, the attempt left `running`). Open, or no answer within a few seconds: timed out, as before.
 * The timed-out try's line is stored at once (poked), so it comes where it happened, before what a later try does;
 * before, it waited for the agent's next line or the run's end, and a try taken over by another worker wrote it
 * after the new run's lines, just before its note. None is written when the agent is already gone (a later try killed
 * it while this worker was paused: the note says so), and the run's end takes it back while still unwritten
 * (withdrawTimedOutLine) when it finds the run taken over: the note alone says what happened.
 */
function runCancellation(
  prep: PreparedRun,
  agentPid: number,
  sink: LogSink,
): { signal: AbortSignal; dispose(): void; withdrawTimedOutLine(): void; workflowClosed(): ClosedRun | undefined } {
  const ctx = Context.current();
  const controller = new AbortController();
  let timedOutLine: LogEntry | undefined;
  let closed: ClosedRun | undefined;
  let disposed = false;
  const onAbort = async () => {
    const d = ctx.cancellationDetails;
    if (d && (d.notFound || d.timedOut) && !d.cancelRequested && !d.workerShutdown) {
      if (!groupAlive(agentPid)) return;
      // the same answer comes when the workflow was closed from Temporal's side (terminated, reset): Temporal is asked
      const run = await workflowClosed(ctx);
      if (disposed || !groupAlive(agentPid)) return;
      if (run) {
        // nobody waits for this agent's end any more: it is stopped, and the run records the attempt's end
        closed = run;
        controller.abort(ctx.cancellationSignal.reason);
        return;
      }
      prep.log('warn', 'Temporal timed this try out (the worker missed its heartbeats); the agent goes on and its end is recorded for the retry');
      timedOutLine = prep.pending.at(-1);
      sink.poke();
      return;
    }
    controller.abort(ctx.cancellationSignal.reason);
  };
  const listener = () => void onAbort();
  if (ctx.cancellationSignal.aborted) listener();
  else ctx.cancellationSignal.addEventListener('abort', listener, { once: true });
  return {
    signal: controller.signal,
    workflowClosed: () => closed,
    dispose: () => {
      disposed = true;
      ctx.cancellationSignal.removeEventListener('abort', listener);
    },
    withdrawTimedOutLine: () => {
      if (timedOutLine) sink.withdraw(timedOutLine);
    },
  };
}

/**
 * The try's workflow closed for good (terminated from Temporal's side, or reset), asked of Temporal through the
 * worker's client within WORKFLOW_STATE_TIMEOUT_MS; undefined while it is open (a try Temporal timed out: its retry
 * comes), when Temporal does not answer in time, or without a client (Temporal's activity test environment).
 */
async function workflowClosed(ctx: Context): Promise<ClosedRun | undefined> {
  let client: Context['client'];
  try {
    client = ctx.client;
  } catch {
    return undefined;
  }
  const run = ctx.info.workflowExecution;
  if (!run) return undefined;
  return (await closedRun(client, run.workflowId, run.runId, WORKFLOW_STATE_TIMEOUT_MS)) ?? undefined;
}

/**
 * Aborts `ms` after `signal` has: a cancelled run's last lines (its end line says how it ended) get that long to be
 * stored while PostgreSQL does not take them, rather than none at all.
 */
function abortedAfter(signal: AbortSignal, ms: number): AbortSignal {
  const later = new AbortController();
  const start = () => setTimeout(() => later.abort(signal.reason), ms).unref();
  if (signal.aborted) start();
  else signal.addEventListener('abort', start, { once: true });
  return later.signal;
}

/**
 * The timers of a running agent: log/progress flushes, heartbeats, resource samples, and the watch on the process
 * and attempt rows (the API's stop and cancel) and on Temporal cancellation, both of which stop the group.
 */
function watchRun(deps: RunAgentDeps, input: RunAgentInput, prep: PreparedRun, proc: GroupProcess, output: AgentOutput, sink: LogSink, cancelled: AbortSignal) {
  const ctx = Context.current();
  let stopReason: StopReason | null = null;
  let lastProgressEvent = 0;
  let flushing = Promise.resolve();
  /**
   * Live state; with `logs` (the run's end) first every log line queued so far (the periodic tick leaves the lines to
   * the sink's own batching). Those lines are waited for past the run's cancellation, for FAILED_RUN_FLUSH_MS: the
   * end line of an agent stopped by a Temporal cancellation (the attempt's cancel when it comes before the row watch's
   * look, a cancel of the workflow from Temporal's side, a worker's shutdown) is queued after the cancellation, and an
   * aborted flush left it in the queue, where nothing wrote it any more (before session 48; the shutdown's line since 47)
   */
  const flush = (logs = true) => {
    flushing = flushing.then(async () => {
      if (logs) await sink.flush(abortedAfter(cancelled, FAILED_RUN_FLUSH_MS));
      // the run's end writes its last values itself, after anything queued for it (lib/attempts/liveState.ts)
      const queued = logs ? await settleLiveState(deps.db, input.processId) : undefined;
      if (output.progress || output.tokens || queued) {
        const p = output.progress || queued?.progress ? { ...queued?.progress, ...output.progress } : undefined;
        output.progress = undefined;
        const values = { progress: p, tokens: output.tokens ? { ...output.tokens, cost: costOf(prep.profile, output) } : queued?.tokens };
        // at most one progress event a second per run
        const event = p !== undefined && Date.now() - lastProgressEvent > 1000;
        if (event) lastProgressEvent = Date.now();
        if (logs) {
          await setProcessLive(deps.db, input.processId, values);
          const row = event ? await getProcess(deps.db, input.processId) : undefined;
          if (row) await publishProcessEvent(deps.db, 'process_progress', row, { progress: row.progress });
        }
        // ticks: one update for all of this worker's agents, with the events of those that have one due
        else await queueLiveState(deps.db, input.processId, values, { event });
      }
    }).catch((err) => {
      // while PostgreSQL is away every tick fails alike: the sink already said so once (lib/attempts/logSink.ts)
      const level = isPostgresUnavailable(err) ? 'debug' : 'warn';
      deps.logger[level]({ err: { message: (err as Error).message } }, 'live state flush failed');
    });
    return flushing;
  };
  const sampler = createGroupSampler(proc.pid);
  const timers = [
    setInterval(() => void flush(false), FLUSH_MS),
    setInterval(() => ctx.heartbeat({ lines: output.lines }), 1000),
    setInterval(() => {
      const s = sampler.sample();
      const resources = { cpuUsage: s.cpu, memoryUsage: s.memory, diskIO: s.diskIO, networkIO: s.networkIO };
      void recordResourceSample(deps.db, input.processId, resources, { timestamp: new Date().toISOString(), ...s }).catch(() => undefined);
    }, SAMPLE_MS),
  ];
  // the attempt cancelled (or deleted) ends the attempt; a stopped/cancelled process only ends this run
  const unwatch = processWatch(deps.db, WATCH_MS).watch(input.processId, (reason) => {
    if (stopReason) return;
    stopReason = reason;
    void proc.stop('abort');
  });
  const onCancel = () => {
    if (!stopReason) stopReason = byWorkerShutdown(ctx) ? 'shutdown' : 'cancelled';
    void proc.stop('abort');
  };
  cancelled.addEventListener('abort', onCancel, { once: true });
  return {
    flush,
    stopReason: () => stopReason,
    stop() {
      for (const t of timers) clearInterval(t);
      unwatch();
      cancelled.removeEventListener('abort', onCancel);
    },
  };
}

/**
 * Temporal's cancellation came from this worker shutting down (a drain or SIGTERM whose grace period ended) rather
 * than from the attempt's cancel. The SDK cancels with the reason `WORKER_SHUTDOWN`, with or without details saying so.
 */
function byWorkerShutdown(ctx: Context): boolean {
  const d = ctx.cancellationDetails;
  if (d?.cancelRequested) return false;
  if (d?.workerShutdown) return true;
  const reason: unknown = ctx.cancellationSignal.reason;
  return reason instanceof CancelledFailure && reason.message === 'WORKER_SHUTDOWN';
}

/**
 * Whether the process row no longer names this try's agent: a later try of the run took it over (on another worker,
 * while this one was paused or cut off from Temporal). That try releases the row's pid before it kills the agent
 * (cleanUpLostRun), so a try whose agent it killed always finds the row so here, once its agent has ended.
 */
async function takenOverFrom(deps: RunAgentDeps, input: RunAgentInput, pid: number): Promise<boolean> {
  if (!pid) return false;
  const row = await untilPostgresAnswers(() => getProcess(deps.db, input.processId));
  return !!row && row.pid !== pid;
}

/** The note of a try whose run a later try took over, in the run's log instead of its agent's end. */
async function noteTakenOver(deps: RunAgentDeps, input: RunAgentInput, pid: number): Promise<void> {
  const message = `activity attempt ${Context.current().info.attempt}'s agent (pid ${pid}) was taken over by a later try of this run on another worker while this one was paused; its end is not recorded`;
  await appendLogs(deps.db, input.processId, input.attemptId, [{ level: 'warn', message, timestamp: new Date().toISOString(), source: 'armada' }]).catch(() => undefined);
}

/**
 * The run's status from how the process ended; logs, metrics and the process row written. Two ends of this try's
 * agent are not the run's, and its log says so instead of giving them as the run's end (an `agent exited with code
 * SIGKILL` error line mid-run reads as the run failing): a later try took the run over (takenOverFrom), or this
 * worker shut down past its grace period (the run is retried).
 */
async function recordRun(deps: RunAgentDeps, input: RunAgentInput, prep: PreparedRun, run: ProcessRun): Promise<RunAgentResult> {
  const m = attemptMetrics(deps.metrics.registry);
  const { result, stopReason, output } = run;
  const argv0 = (input.kind === 'follow_up' ? prep.profile.resumeCommand : prep.profile.command)[0];
  const exit = result.code ?? result.signal;
  // the shutdown's stop ended the agent (not one that had just exited by itself: that end is the run's)
  const shutdown = stopReason === 'shutdown' && result.aborted;
  const stop = stopReason === 'shutdown' ? null : stopReason;
  let status: RunAgentResult['status'];
  let error: string | null = null;
  /** the end line, written only when this end is the run's */
  let endLine: LogEntry['level'] | null = null;
  let endMessage = '';
  if (result.spawnError) {
    status = 'failed';
    error = `could not start ${argv0}: ${result.spawnError}`;
  } else if (stop && run.workflowClosed) {
    // terminated from Temporal's side (its heartbeat said "not found", and Temporal that the workflow is closed)
    status = 'cancelled';
    [endLine, endMessage] = ['warn', `the workflow was ${closedRunText(run.workflowClosed)}; the agent was stopped (exit ${exit})`];
  } else if (stop) {
    status = stop;
    [endLine, endMessage] = ['warn', `agent ${stop} (exit ${exit})`];
  } else if (result.timedOut) {
    status = 'failed';
    error = `agent timed out after ${Math.round(input.timeoutMs / 1000)} s`;
  } else if (result.code === 0) {
    status = 'completed';
    [endLine, endMessage] = ['info', 'agent exited with code 0'];
  } else {
    status = 'failed';
    error = `agent exited with code ${exit}`;
  }
  if (error) [endLine, endMessage] = ['error', error];
  const takenOver = await takenOverFrom(deps, input, result.pid);
  if (takenOver) {
    // a later try killed this agent (or started its own once this one had ended): only the note, after the agent's
    // own lines (noteTakenOver, below); a `Temporal timed this try out` line not yet stored would now come after the
    // later try's lines, and the note explains that end
    run.withdrawTimedOutLine();
  } else if (shutdown) {
    // the row stays `running` and names this agent, so the retry Temporal schedules for this try (on another worker,
    // or this one restarted) finds it gone and runs the agent again from the last commit, as for a lost worker; before,
    // the run was recorded `cancelled` and the retry returned that, the attempt left `running` with its workflow ended
    prep.log('warn', `this worker shut down while the agent ran (its grace period ended): agent stopped (exit ${exit}); a later try of this run starts it again`);
  } else if (endLine) prep.log(endLine, endMessage);
  if (result.leftoversEnded) {
    const n = result.leftoversEnded;
    prep.log('warn', `stopped ${n} process${n === 1 ? '' : 'es'} the agent left running when it exited (SIGTERM, SIGKILL after the grace period), so they do not outlive the run`);
  }
  // heartbeating: while PostgreSQL is away the run's last lines wait for it here, and Temporal must not retry meanwhile
  // (a cancelled run's, a little: its end line is what says how it ended)
  await keepAlive(() => run.flush());
  const { tokens } = output;
  if (tokens) {
    m.tokens.inc({ llm: input.llm, direction: 'input' }, tokens.input);
    m.tokens.inc({ llm: input.llm, direction: 'output' }, tokens.output);
  }
  const cost = costOf(prep.profile, output);
  if (cost > 0) m.cost.inc({ llm: input.llm }, cost);
  const ended = { status, exitCode: result.code, error, summary: output.summary || (output.finalMessage.text() ?? ''), sessionId: output.sessionId };
  if (takenOver) {
    await noteTakenOver(deps, input, result.pid);
    return { ...ended, takenOver: true };
  }
  if (shutdown) throw new CancelledFailure('WORKER_SHUTDOWN');
  // a process a stop or cancel already moved gets its real exit code filled in; the agent has run, so an outage is
  // waited out rather than failing the try (its retry would run the agent again). Only while the row still names this
  // try's agent: a later try that took the run over (another worker, while this one was paused) owns it now
  const ours = await untilPostgresAnswers(async () => {
    const fence = { pid: result.pid };
    if (await recordProcessEnded(deps.db, input.processId, status, result.code, error, fence)) return true;
    return setProcessExit(deps.db, input.processId, result.code, error, fence);
  });
  if (!ours) {
    // taken over between the look above and this record: only when this agent ended by itself just as the later try
    // started its own (that try's kill comes after it released the row, seen above), so the end line written is this
    // agent's true end, followed by the note
    await noteTakenOver(deps, input, result.pid);
    return { ...ended, takenOver: true };
  }
  if (status === 'cancelled') {
    // the attempt's cancel that reached the agent through Temporal alone (the workflow cancelled from Temporal's side:
    // `temporal workflow cancel`, its UI) is recorded as the API's cancel records it; before, the attempt and its
    // task stayed `running`/`in_progress` for good, the workflow closed. So is a workflow terminated from Temporal's
    // side (`temporal workflow terminate`, its UI): before session 48 its agent ran on to its end or its timeout. Nothing
    // when the API's cancel recorded it, or a delete removed the attempt
    const cancelled = await untilPostgresAnswers(() => withTransaction(deps.db, (c) => recordAttemptCancelled(c, input.attemptId)));
    if (cancelled) m.attempts.inc({ llm: input.llm, status: 'cancelled' });
  }
  return ended;
}

/**
 * A profile's `maxConcurrent`: waits (heartbeating, progress stage "queued") until fewer than max processes of this
 * agent have started, across all workers. The check and the claim (pid 0 = starting) happen under a transaction-scoped
 * advisory lock per agent name, so two workers cannot both take the last slot. Returns a result when the run was
 * stopped or cancelled while it waited.
 */
/**
 * This worker's own cap (`--max-agents`): waits, heartbeating, for a free agent slot. Returns the release function,
 * or the run's result when it was cancelled while waiting.
 */
async function waitForWorkerSlot(deps: RunAgentDeps, input: RunAgentInput): Promise<(() => void) | RunAgentResult> {
  const slots = deps.agentSlots;
  if (!slots) return () => undefined;
  const ctx = Context.current();
  if (slots.inUse() >= slots.max) {
    await appendLogs(deps.db, input.processId, input.attemptId, [
      { level: 'info', message: `waiting for a free agent slot on this worker (--max-agents ${slots.max})`, timestamp: new Date().toISOString(), source: 'armada' },
    ]);
    await setProcessLive(deps.db, input.processId, { progress: { stage: 'queued', current: 'waiting for a free agent slot on this worker' } });
  }
  const beat = setInterval(() => ctx.heartbeat({ queued: true }), 1000);
  try {
    return await slots.acquire(ctx.cancellationSignal);
  } catch {
    throw new CancelledFailure('agent run cancelled while waiting for a worker slot');
  } finally {
    clearInterval(beat);
  }
}

async function waitForAgentSlot(deps: RunAgentDeps, input: RunAgentInput, max: number): Promise<RunAgentResult | undefined> {
  const ctx = Context.current();
  let announced = false;
  for (;;) {
    const claimed = await withTransaction(deps.db, async (c) => {
      await c.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`agent-slot:${input.llm}`]);
      const { rows } = await c.query<{ n: string }>(
        `SELECT count(*) AS n FROM processes WHERE llm = $1 AND status = 'running' AND pid IS NOT NULL AND id <> $2`,
        [input.llm, input.processId],
      );
      if (Number(rows[0]?.n ?? 0) >= max) return false;
      await c.query('UPDATE processes SET pid = 0 WHERE id = $1', [input.processId]);
      return true;
    });
    if (claimed) return undefined;
    if (!announced) {
      announced = true;
      await appendLogs(deps.db, input.processId, input.attemptId, [
        { level: 'info', message: `waiting for a free ${input.llm} slot (maxConcurrent ${max})`, timestamp: new Date().toISOString(), source: 'armada' },
      ]);
      await setProcessLive(deps.db, input.processId, { progress: { stage: 'queued', current: `waiting for a free ${input.llm} slot` } });
    }
    ctx.heartbeat({ queued: true });
    if (ctx.cancellationSignal.aborted) throw new CancelledFailure('agent run cancelled while queued');
    const { rows } = await deps.db.query<{ p: string; a: string }>(
      'SELECT p.status AS p, a.status AS a FROM processes p JOIN attempts a ON a.id = p.attempt_id WHERE p.id = $1',
      [input.processId],
    );
    const r = rows[0];
    if (!r || r.a === 'cancelled') return { status: 'cancelled', exitCode: null, error: null, summary: '', sessionId: null };
    if (r.p !== 'running') return { status: 'stopped', exitCode: null, error: null, summary: '', sessionId: null };
    await new Promise((res) => setTimeout(res, 500));
  }
}
