/**
 * The attempt commands the HTTP API runs: create, start (new or created attempt), cancel, stop a process, merge,
 * delete. Each writes its projection rows and events in one transaction and talks to Temporal by workflow id.
 */
import { performance } from 'node:perf_hooks';
import { WorkflowExecutionAlreadyStartedError, WorkflowNotFoundError, type Client } from '@temporalio/client';
import type { Pool } from 'pg';
import type { ArmadaConfig } from '../../lib/config';
import { withTransaction, type Queryable } from '../../lib/db/pool';
import {
  bindFollowUpKey,
  claimIdempotencyKey,
  deleteAttemptRow,
  findIdempotentAttempt,
  getAttempt,
  insertAttempt,
  insertStartingAttempt,
  lockTasksWithAttempts,
  markAttemptRunning,
  stalePendingStarts,
  type AttemptRow,
  type StartingTask,
} from '../../lib/db/attempts';
import { getProject, type ProjectRow } from '../../lib/db/projects';
import { getProcess, insertProcess, processesOfAttempt, type ProcessRow } from '../../lib/db/processes';
import { getTask, getTaskAgentDefaults, type TaskRow } from '../../lib/db/tasks';
import { conflict, notFound, validationError, AppError } from '../../lib/errors';
import type { DependencyState } from '../../lib/runtime/dependencies';
import { releasedWhenPostgresDown } from '../http/workerWait';
import { newId } from '../../lib/ids';
import { isTemporalUnreachable, TEMPORAL_OVERLOAD_RETRY_AFTER_SECONDS, TEMPORAL_OVERLOADED_MESSAGE, temporalRefusal, type TemporalHandle } from '../../lib/temporal/client';
import { appErrorOfFailure } from '../../lib/temporal/appErrorFailure';
import type { Metrics } from '../../lib/metrics';
import { resolveAgentProfile } from '../../lib/agents/profiles';
import type { AttemptWorkflowInput } from '../../workflows/attemptWorkflow';
import type { MergeWorkflowInput, MergeWorkflowResult } from '../../workflows/mergeWorkflow';
import { ATTEMPT_PATHS, attemptWorkflowId, followUpSignal, stopProcessSignal } from '../../workflows/attemptMessages';
import { attemptMetrics } from '../../lib/attempts/metrics';
import { attemptSearchAttributes } from '../../lib/temporal/searchAttributes';
import { checkMergePreconditions } from '../../lib/attempts/mergePreconditions';
import { oweWorkflowCancels, owedWorkflowCancels, workflowCancelDelivered } from '../../lib/attempts/owedCancels';
import { confirmAttemptStarted, moveTask, recordAttemptCancelled, requestProcessEnd, undoAttemptStart } from '../../lib/attempts/projections';
import type { BackgroundWork } from '../../lib/runtime/background';
import { eachLimit } from '../../lib/runtime/eachLimit';
import type { MergeStrategy } from '../../lib/attempts/mergeStrategy';
import type { CleanupError, WorktreeRemoval } from '../../lib/attempts/cleanup';
import { cancelApprovalsOfAttempts, deleteWithApprovals } from './approvalsOfDeletedAttempts';
import { isRunning, requestCancel } from '../../lib/temporal/workflowHandles';
import { closedRun } from '../../lib/temporal/closedRun';
import { withinTemporalBound } from '../../lib/temporal/temporalBound';
import { recordClosedAttempt } from '../../lib/attempts/closedWorkflows';
import { requestHash } from '../../lib/attempts/requestHash';

export interface AttemptServiceDeps {
  db: Pool;
  config: ArmadaConfig;
  temporal: TemporalHandle;
  metrics: Metrics;
  /** Where a start's confirmation runs after the answer (when phase 1 moved the task); unset: before the answer. */
  background?: BackgroundWork;
  /** What is down right now: a merge waiting on the worker is released when PostgreSQL goes (api/http/workerWait.ts). */
  dependencies?: DependencyState;
}

export interface AttemptOptions {
  temperature?: number;
  maxTokens?: number;
  /** seconds */
  timeout?: number;
}


/**
 * Temporal not reachable (connect failure, UNAVAILABLE, deadline), or refusing or failing the start: a 503 the client
 * may retry; nothing was kept. An overloaded Temporal's says so, with its Retry-After, as every route's does.
 */
function engineUnavailable(err: unknown): AppError {
  if (err instanceof AppError) return err;
  if (temporalRefusal(err) === 'overloaded') return new AppError(503, 'SERVICE_UNAVAILABLE', TEMPORAL_OVERLOADED_MESSAGE, { retryAfterSeconds: TEMPORAL_OVERLOAD_RETRY_AFTER_SECONDS });
  return new AppError(503, 'SERVICE_UNAVAILABLE', `The workflow engine is unavailable; try again (${(err as Error).message.slice(0, 200)})`);
}

async function temporalClient(deps: AttemptServiceDeps): Promise<Client> {
  try {
    return await deps.temporal.client();
  } catch (err) {
    throw engineUnavailable(err);
  }
}

function resolveLlm(config: ArmadaConfig, llm: string | undefined, task: Pick<TaskRow, 'assignee'>, project: Pick<ProjectRow, 'default_llm'>) {
  const name = llm ?? task.assignee ?? project.default_llm ?? undefined;
  // The body is valid; what is missing is state (no assignee, no project default), so this is a conflict, not a 400.
  if (!name) {
    throw conflict('No agent to run: pass "llm", or give the task an assignee or the project a defaultLLM', 'AGENT_REQUIRED', {
      llm: 'is required while the task has no assignee and the project no defaultLLM',
    });
  }
  const profile = resolveAgentProfile(config, name);
  if (!profile && llm) throw validationError(`Unknown agent "${name}"`, { llm: `unknown agent "${name}"` });
  if (!profile) {
    // no llm was sent, so the name is state, as AGENT_REQUIRED's missing one is: a 409 naming where it came from (it
    // was a 400 naming `llm`, a field the request did not hold; an assignee is free text, often a person)
    const [field, whose] = task.assignee ? ['assignee', "the task's assignee"] : ['defaultLLM', "the project's defaultLLM"];
    throw conflict(`No agent to run: ${whose} "${name}" is no configured agent; pass "llm" (GET /api/projects/:id lists them in config.llms), or change ${whose}`, 'AGENT_UNKNOWN', {
      [field]: `"${name}" is no configured agent`,
    });
  }
  return { name, profile };
}

async function lockTask(c: Queryable, taskId: string): Promise<TaskRow> {
  const { rows } = await c.query<TaskRow>('SELECT * FROM tasks WHERE id = $1 FOR UPDATE', [taskId]);
  const t = rows[0];
  if (!t) throw notFound(`Task ${taskId} not found`, 'TASK_NOT_FOUND');
  return t;
}

function promptOf(task: Pick<TaskRow, 'title' | 'description'>, attempt: AttemptRow): string {
  return [task.title, task.description, attempt.description].filter((s) => s?.trim()).join('\n\n');
}

const START_TIMEOUT_MS = 20_000;

/**
 * Phase 2 of a start: the attempt's workflow, by id. `rejectClosed` (every start but a `created` attempt's own: a new
 * attempt's id has had no run unless this very start reached Temporal before, and the start reconciler's or an
 * Idempotency-Key replay's repeat may follow one that did) never starts a new run of an id Temporal has closed
 * (terminated, cancelled, failed, completed): it throws WorkflowExecutionAlreadyStartedError instead, and the caller
 * records the attempt's end (endStartOfClosedWorkflow). An open run is joined either way.
 */
async function startWorkflow(
  deps: AttemptServiceDeps,
  client: Client,
  task: StartingTask,
  attempt: AttemptRow,
  processId: string,
  prompt = promptOf(task, attempt),
  rejectClosed = true,
): Promise<void> {
  const f = deps.config.file.attempts ?? {};
  const timeoutSec = Number((attempt.options as AttemptOptions).timeout ?? f.defaultTimeoutSec ?? 3600);
  const input: AttemptWorkflowInput = {
    attemptId: attempt.id,
    taskId: task.id,
    llm: attempt.llm,
    processId,
    prompt,
    commitMessage: `${task.title} (attempt ${attempt.number})`,
    timeoutMs: timeoutSec * 1000,
    heartbeatTimeoutMs: f.heartbeatTimeoutMs ?? 30_000,
    idleTimeoutMs: f.idleTimeoutMs ?? 24 * 3600_000,
    requestedAt: new Date().toISOString(),
    paths: ATTEMPT_PATHS,
    ...(f.continueAsNewEvery ? { continueAsNewEvery: f.continueAsNewEvery } : {}),
  };
  // idempotent by workflow id: a repeated start (retry, reconciler) joins the running workflow
  await client.connection.withDeadline(Date.now() + (f.startTimeoutMs ?? START_TIMEOUT_MS), () =>
    client.workflow.start('attemptWorkflow', {
      workflowId: attemptWorkflowId(attempt.id),
      taskQueue: deps.config.temporal.taskQueue,
      args: [input],
      workflowIdConflictPolicy: 'USE_EXISTING',
      workflowIdReusePolicy: rejectClosed ? 'REJECT_DUPLICATE' : 'ALLOW_DUPLICATE',
      typedSearchAttributes: attemptSearchAttributes({ taskId: task.id, projectId: task.project_id, attemptId: attempt.id, agent: attempt.llm }),
    }),
  );
}

/** The attempt's first process (phase 1 of a start, in the transaction that makes the attempt running). */
function insertFirstProcess(c: Queryable, task: TaskRow, attempt: AttemptRow): Promise<ProcessRow> {
  return insertProcess(c, {
    id: newId(),
    attemptId: attempt.id,
    taskId: task.id,
    llm: attempt.llm,
    model: attempt.model,
    kind: 'initial',
    prompt: promptOf(task, attempt),
  });
}

/**
 * Phase 3 of a start, once the workflow runs: task in_progress and attempt.started, exactly once, in one statement.
 * The confirmation that made it counts the attempt `started` (docs/metrics.md): so a start is counted once, whether
 * its request, an Idempotency-Key replay or the start reconciler finished it, and also when two of them did.
 */
async function confirmStart(deps: AttemptServiceDeps, task: StartingTask, attemptId: string, processId: string): Promise<void> {
  const confirmed = await confirmAttemptStarted(deps.db, attemptId, task.project_id, processId);
  if (confirmed) attemptMetrics(deps.metrics.registry).attempts.inc({ llm: confirmed.llm, status: 'started' });
}

/**
 * Phases 2 and 3 of a start whose rows are committed: start the workflow, then confirm. When Temporal cannot start
 * it, the start is undone (nothing stays behind) and the caller gets 503 — unless it was confirmed meanwhile.
 * `confirmAfterAnswer` (a start whose phase 1 moved the task): what a reader sees no longer changes with the
 * confirmation (its events do), so the answer does not wait for it; it runs in the background, and the start
 * reconciler confirms a start whose confirmation failed or was cut short. `attempt` is the attempt to answer with:
 * the one given, or, when the start found its workflow id closed and recorded the attempt's end, the row as recorded
 * (`cancelled`), so the answer does not call running an attempt that has ended.
 */
async function finishStart(
  deps: AttemptServiceDeps,
  client: Client,
  task: StartingTask,
  attempt: AttemptRow,
  processId: string,
  how: { wasCreated: boolean; prompt?: string; confirmAfterAnswer?: boolean },
): Promise<{ temporalMs: number; attempt: AttemptRow }> {
  const began = performance.now();
  try {
    // a created attempt's start may run it anew (Temporal's default); every other start never re-starts a closed id
    await startWorkflow(deps, client, task, attempt, processId, how.prompt, !how.wasCreated);
  } catch (err) {
    if (err instanceof WorkflowExecutionAlreadyStartedError) {
      const ended = await endStartOfClosedWorkflow(deps, client, task, attempt, processId);
      const recorded = ended ? await getAttempt(deps.db, attempt.id) : undefined;
      return { temporalMs: performance.now() - began, attempt: recorded ?? attempt };
    }
    if (await undoAttemptStart(deps.db, attempt.id, processId, how.wasCreated)) throw engineUnavailable(err);
    // confirmed meanwhile (a concurrent repeat or the reconciler started it, and counted it): it runs
    return { temporalMs: performance.now() - began, attempt };
  }
  const temporalMs = performance.now() - began;
  if (how.confirmAfterAnswer && deps.background) deps.background.run('confirming an attempt start', () => confirmStart(deps, task, attempt.id, processId));
  else await confirmStart(deps, task, attempt.id, processId);
  return { temporalMs, attempt };
}

/**
 * A pending start whose workflow id Temporal has closed (the start reached Temporal, then the run was terminated,
 * cancelled or failed before the start was confirmed): never started again. The start is confirmed (the workflow did
 * run: attempt.started), then the attempt ends as the closed-workflow reconciler records it (cancelled, the line saying
 * how the workflow ended). Left as it is while Temporal does not answer whether the id is closed: the next try looks again.
 */
async function endStartOfClosedWorkflow(deps: AttemptServiceDeps, client: Client, task: StartingTask, attempt: Pick<AttemptRow, 'id' | 'llm'>, processId: string): Promise<boolean> {
  const run = await closedRun(client, attemptWorkflowId(attempt.id), undefined, CLOSED_RUN_TIMEOUT_MS);
  if (!run) return false;
  // confirmed without counting the start `started`: it is counted as the cancel it is, by whoever records it (docs/metrics.md)
  await confirmAttemptStarted(deps.db, attempt.id, task.project_id, processId);
  if (await recordClosedAttempt(deps.db, attempt.id, run)) attemptMetrics(deps.metrics.registry).attempts.inc({ llm: attempt.llm, status: 'cancelled' });
  return true;
}

/** How long a start that found its workflow id closed waits for Temporal to say how it closed. */
const CLOSED_RUN_TIMEOUT_MS = 5000;

/**
 * Finishes starts left pending longer than `olderThanMs` (the starting process died between its commit and the
 * confirmation): the workflow start is repeated (idempotent by id: an open run is joined, a closed one is never started
 * again but recorded as closed) and attempt.started published. Returns how many.
 */
export async function reconcilePendingStarts(deps: AttemptServiceDeps, olderThanMs: number): Promise<number> {
  const pending = await stalePendingStarts(deps.db, new Date(Date.now() - olderThanMs));
  if (!pending.length) return 0;
  const client = await deps.temporal.client();
  let done = 0;
  for (const a of pending) {
    const task = await getTask(deps.db, a.task_id);
    const first = (await processesOfAttempt(deps.db, a.id))[0];
    if (!task || !first) continue;
    try {
      await startWorkflow(deps, client, task, a, first.id);
    } catch (err) {
      if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
      await endStartOfClosedWorkflow(deps, client, task, a, first.id);
      done++;
      continue;
    }
    await confirmStart(deps, task, a.id, first.id);
    done++;
  }
  return done;
}

export interface StartResult {
  attempt: AttemptRow;
  processId: string;
  replayed: boolean;
  /** milliseconds in PostgreSQL (the start's commit) and in Temporal (the workflow start), for Server-Timing */
  timing: { dbMs: number; temporalMs: number };
}

/**
 * POST /api/tasks/:id/start: a new running attempt. With an idempotency key, repeats return the first attempt.
 * Three phases, never holding a transaction while Temporal answers (docs/attempts.md, "Starting an attempt"):
 * commit the attempt, its first process (start pending) and the task's move to in_progress, start the workflow by id,
 * answer, and confirm (the events) after the answer. A start Temporal refuses is undone: a 503 leaves nothing behind,
 * a 2xx runs.
 */
export async function startNewAttempt(
  deps: AttemptServiceDeps,
  taskId: string,
  body: { llm?: string; options?: AttemptOptions; description?: string },
  idempotencyKey?: string,
): Promise<StartResult> {
  const { name, profile } = await startingAgent(deps, taskId, body.llm);
  const client = await temporalClient(deps);
  if (idempotencyKey) return startNewAttemptOnce(deps, client, taskId, { name, model: profile.model ?? null }, body, { key: idempotencyKey, hash: requestHash(body) });
  // phase 1 in one round trip (one statement: task lock, attempt, first process)
  const began = performance.now();
  const started = await insertStartingAttempt(deps.db, {
    id: newId(),
    taskId,
    llm: name,
    model: profile.model ?? null,
    branchPrefix: deps.config.branchPrefix,
    options: { ...body.options },
    description: body.description ?? '',
    processId: newId(),
  });
  const dbMs = performance.now() - began;
  if (!started) throw notFound(`Task ${taskId} not found`, 'TASK_NOT_FOUND');
  const finished = await finishStart(deps, client, started.task, started.attempt, started.processId, {
    wasCreated: false,
    prompt: started.prompt,
    confirmAfterAnswer: true,
  });
  const { temporalMs, attempt } = finished;
  return { attempt, processId: started.processId, replayed: false, timing: { dbMs, temporalMs } };
}

/**
 * The agent of a start: the one named, else the task's assignee, else the project's default. The task is read only
 * when no agent is named or the named one is unknown (a missing task is 404 before an unknown agent is 400).
 */
async function startingAgent(deps: AttemptServiceDeps, taskId: string, llm: string | undefined) {
  const named = llm ? resolveAgentProfile(deps.config, llm) : undefined;
  if (llm && named) return { name: llm, profile: named };
  const defaults = await getTaskAgentDefaults(deps.db, taskId);
  if (!defaults) throw notFound(`Task ${taskId} not found`, 'TASK_NOT_FOUND');
  return resolveLlm(deps.config, llm, defaults, defaults);
}

/**
 * A start with an Idempotency-Key: repeats of the key with the same body return the first attempt (finishing its
 * start if pending); a repeat with another body is the 422 idempotencyKeyReused, and changes nothing.
 */
async function startNewAttemptOnce(
  deps: AttemptServiceDeps,
  client: Client,
  taskId: string,
  agent: { name: string; model: string | null },
  body: { options?: AttemptOptions; description?: string },
  idempotency: { key: string; hash: string },
): Promise<StartResult> {
  const scope = `task-start:${taskId}`;
  const began = performance.now();
  const result = await withTransaction(deps.db, async (c) => {
    const task = await lockTask(c, taskId);
    const existing = await findIdempotentAttempt(c, scope, idempotency.key);
    if (existing) {
      if (existing.requestHash !== null && existing.requestHash !== idempotency.hash) throw idempotencyKeyReused(`to start task ${taskId}`, 'start another attempt');
      const a = (await getAttempt(c, existing.attemptId)) as AttemptRow;
      const first = (await processesOfAttempt(c, existing.attemptId))[0];
      return { task, attempt: a, processId: first?.id ?? '', replayed: true };
    }
    const project = await getProject(c, task.project_id);
    if (!project) throw notFound(`Project ${task.project_id} not found`, 'PROJECT_NOT_FOUND');
    const attempt = await insertAttempt(c, {
      id: newId(),
      taskId,
      llm: agent.name,
      model: agent.model,
      status: 'running',
      branchPrefix: deps.config.branchPrefix,
      baseBranch: project.repo_branch,
      options: { ...body.options },
      description: body.description ?? '',
    });
    await claimIdempotencyKey(c, scope, idempotency.key, attempt.id, idempotency.hash);
    const proc = await insertFirstProcess(c, task, attempt);
    return { task, attempt, processId: proc.id, replayed: false };
  });
  const dbMs = performance.now() - began;
  // a replay of a start still pending (its first request is in flight or died) finishes it the same way
  const pending = !result.replayed || result.attempt.start_pending_since;
  const finished = pending ? await finishStart(deps, client, result.task, result.attempt, result.processId, { wasCreated: false }) : { temporalMs: 0, attempt: result.attempt };
  return { attempt: finished.attempt, processId: result.processId, replayed: result.replayed, timing: { dbMs, temporalMs: finished.temporalMs } };
}

/** POST /api/attempts: a `created` attempt (started later with POST /api/attempts/:id/start). */
export async function createAttempt(deps: AttemptServiceDeps, body: { taskId: string; llm?: string; options?: AttemptOptions; description?: string }): Promise<AttemptRow> {
  const pre = await getTask(deps.db, body.taskId);
  if (!pre) throw notFound(`Task ${body.taskId} not found`, 'TASK_NOT_FOUND');
  const project = await getProject(deps.db, pre.project_id);
  if (!project) throw notFound(`Project ${pre.project_id} not found`, 'PROJECT_NOT_FOUND');
  const { name, profile } = resolveLlm(deps.config, body.llm, pre, project);
  return withTransaction(deps.db, async (c) => {
    await lockTask(c, body.taskId);
    return insertAttempt(c, {
      id: newId(),
      taskId: body.taskId,
      llm: name,
      model: profile.model,
      status: 'created',
      branchPrefix: deps.config.branchPrefix,
      baseBranch: project.repo_branch,
      options: { ...body.options },
      description: body.description ?? '',
    });
  });
}

/** POST /api/attempts/:id/start: created → running, in the same three phases as startNewAttempt. */
export async function startCreatedAttempt(deps: AttemptServiceDeps, attemptId: string): Promise<StartResult> {
  const client = await temporalClient(deps);
  const began = performance.now();
  const result = await withTransaction(deps.db, async (c) => {
    const a = await getAttempt(c, attemptId, true);
    if (!a) throw notFound(`Attempt ${attemptId} not found`);
    if (a.status !== 'created') throw conflict(`Attempt ${attemptId} is ${a.status}; only a created attempt can be started`, 'CONFLICT', { status: a.status });
    const task = await lockTask(c, a.task_id);
    const running = (await markAttemptRunning(c, attemptId)) as AttemptRow;
    const proc = await insertFirstProcess(c, task, running);
    return { task, attempt: running, processId: proc.id };
  });
  const dbMs = performance.now() - began;
  const { temporalMs, attempt } = await finishStart(deps, client, result.task, result.attempt, result.processId, { wasCreated: true });
  return { attempt, processId: result.processId, replayed: false, timing: { dbMs, temporalMs } };
}

/**
 * The limit of a Temporal call a request waits for outside a transaction (an attempt's cancel, a delete's removal
 * start, a follow-up queue's "is the attempt running"): attempts.startTimeoutMs, as for an attempt's start. Past it,
 * or with Temporal not reached, the 503 "try again" (lib/temporal/temporalBound.ts); before, such a call waited
 * without a limit on a Temporal that took the request and did not answer.
 */
export const temporalCallMs = (deps: Pick<AttemptServiceDeps, 'config'>): number => deps.config.file.attempts?.startTimeoutMs ?? START_TIMEOUT_MS;

/**
 * Requests the cancellation of a workflow; false when there is no such workflow (it has ended, or never started).
 * Within temporalCallMs: past it, or with Temporal known down or not reached, the 503 "try again".
 */
async function cancelWorkflowById(deps: AttemptServiceDeps, workflowId: string): Promise<boolean> {
  const client = await deps.temporal.client();
  return withinTemporalBound(client, temporalCallMs(deps), () => requestCancel(client, workflowId));
}

const cancelWorkflow = (deps: AttemptServiceDeps, attemptId: string) => cancelWorkflowById(deps, attemptWorkflowId(attemptId));

/**
 * The workflow cancel after a cancel already committed (the attempt recorded cancelled, its running processes
 * too): a Temporal that is down or does not answer within temporalCallMs does not change the answer, which is what
 * was done. The run ends without it (docs/attempts.md, "Cancellation and stopping": the row watch stops the agent,
 * the run then ends cancelled; an idle run ends at its next follow-up or after attempts.idleTimeoutMs).
 */
async function cancelWorkflowAfterCommit(deps: AttemptServiceDeps, attemptId: string): Promise<void> {
  try {
    await deliverOwedCancel(deps, attemptId);
  } catch (err) {
    // still owed: the start reconciler's pass sends it again (reconcileOwedCancels)
    if (!(err instanceof AppError && err.statusCode === 503) && !isTemporalUnreachable(err)) throw err;
  }
}

/** Sends an owed workflow cancel and, once Temporal took it (or had no such workflow), clears the owing mark. */
async function deliverOwedCancel(deps: AttemptServiceDeps, attemptId: string): Promise<void> {
  await cancelWorkflow(deps, attemptId);
  await workflowCancelDelivered(deps.db, attemptId);
}

/**
 * The start reconciler's second job (api/task/attemptStartReconciler.ts): sends again each workflow cancel a
 * committed cancel has owed for longer than `olderThanMs` (lib/attempts/owedCancels.ts). Resolves with how many
 * Temporal took; the first cancel Temporal does not take ends the pass (the next one tries again).
 */
export async function reconcileOwedCancels(deps: AttemptServiceDeps, olderThanMs: number): Promise<number> {
  const owed = await owedWorkflowCancels(deps.db, new Date(Date.now() - olderThanMs));
  for (const attemptId of owed) await deliverOwedCancel(deps, attemptId);
  return owed.length;
}

/** POST /api/attempts/:id/cancel: 409 when the attempt already finished. */
export async function cancelAttempt(deps: AttemptServiceDeps, attemptId: string): Promise<AttemptRow> {
  const a = await withTransaction(deps.db, async (c) => {
    const cur = await getAttempt(c, attemptId, true);
    if (!cur) throw notFound(`Attempt ${attemptId} not found`);
    const done = await recordAttemptCancelled(c, attemptId);
    if (!done) throw conflict(`Attempt ${attemptId} is already ${cur.status}`, 'CONFLICT', { status: cur.status });
    await oweWorkflowCancels(c, [attemptId]);
    return done;
  });
  attemptMetrics(deps.metrics.registry).attempts.inc({ llm: a.llm, status: 'cancelled' });
  await cancelWorkflowAfterCommit(deps, attemptId);
  return a;
}

/** POST /api/tasks/:id/cancel: cancels the task's unfinished attempts and moves the task to cancelled. */
export async function cancelTask(deps: AttemptServiceDeps, taskId: string): Promise<{ task: TaskRow; cancelled: AttemptRow[] }> {
  const out = await withTransaction(deps.db, async (c) => {
    // the attempts' rows before the task's, as every writer of both takes them (lockTasksWithAttempts)
    const { taskIds } = await lockTasksWithAttempts(c, { taskIds: [taskId] });
    if (taskIds.length === 0) throw notFound(`Task ${taskId} not found`, 'TASK_NOT_FOUND');
    const { rows } = await c.query<{ id: string }>(`SELECT id FROM attempts WHERE task_id = $1 AND status IN ('created', 'running') ORDER BY number`, [taskId]);
    const cancelled: AttemptRow[] = [];
    for (const r of rows) {
      const a = await recordAttemptCancelled(c, r.id, false);
      if (a) cancelled.push(a);
    }
    await oweWorkflowCancels(c, cancelled.map((a) => a.id));
    await moveTask(c, taskId, 'cancelled');
    return { task: (await getTask(c, taskId)) as TaskRow, cancelled };
  });
  for (const a of out.cancelled) {
    attemptMetrics(deps.metrics.registry).attempts.inc({ llm: a.llm, status: 'cancelled' });
    await cancelWorkflowAfterCommit(deps, a.id);
  }
  return out;
}

/** Stop (`stopped`) or cancel (`cancelled`) one running process; the agent activity sees the row and kills the group. */
export async function endProcess(deps: AttemptServiceDeps, processId: string, status: 'stopped' | 'cancelled'): Promise<ProcessRow> {
  const p = await withTransaction(deps.db, async (c) => {
    const cur = await getProcess(c, processId);
    if (!cur) throw notFound(`Process ${processId} not found`);
    const row = await requestProcessEnd(c, processId, status);
    if (!row) throw conflict(`Process ${processId} is already ${cur.status}`, 'CONFLICT', { status: cur.status });
    return row;
  });
  try {
    const client = await deps.temporal.client();
    await withinTemporalBound(client, temporalCallMs(deps), () => client.workflow.getHandle(attemptWorkflowId(p.attempt_id)).signal(stopProcessSignal, { processId }));
  } catch {
    // the workflow may have ended, or Temporal did not answer in time; the row is what the activity watches
  }
  return p;
}

/** Whether the attempt's workflow is running, so a follow-up signalled to it is run (false: ended, or never started). */
export const acceptsFollowUps = (client: Client, attemptId: string): Promise<boolean> => isRunning(client, attemptWorkflowId(attemptId));

/** Why an attempt whose workflow is not running takes no follow-ups, and what to do instead, as its row tells. */
function whyNoFollowUps(a: AttemptRow): string {
  const again = 'start a new attempt of its task to go on';
  if (a.status === 'created') return `has not started yet, so it takes no follow-ups: start it first (POST /api/attempts/${a.id}/start), then send the follow-up`;
  if (a.status === 'running' && a.start_pending_since) return 'is still starting (its workflow has not started yet), so it takes no follow-ups yet: send the follow-up again in a few seconds';
  if (a.status === 'running') return `is recorded running, but its workflow is not running (it ended in Temporal, or never started there), so it takes no follow-ups: ${again}`;
  if (a.status === 'cancelled') return `was cancelled, so it takes no follow-ups: ${again}`;
  if (a.merged_at) return `has been merged and its workflow has ended, so it takes no follow-ups: ${again}`;
  return `has finished (${a.status}) and its workflow has ended (idle for attempts.idleTimeoutMs, or ended in Temporal), so it takes no more follow-ups: ${again}`;
}

/**
 * The 409 CONFLICT of a follow-up to an attempt whose workflow is not running (details `{status}`): the message says
 * why, from the attempt's row (not started yet, still starting, cancelled, finished), and what to do. A 404 when the
 * attempt is gone meanwhile.
 */
export async function followUpsRefused(db: Queryable, attemptId: string): Promise<AppError> {
  const a = await getAttempt(db, attemptId);
  if (!a) return notFound(`Attempt ${attemptId} not found`);
  return conflict(`Attempt ${attemptId} ${whyNoFollowUps(a)}`, 'CONFLICT', { status: a.status });
}

/**
 * The 503 of a follow-up whose signal Temporal did not answer within temporalCallMs (or whose connection failed under
 * it): the signal may have reached the workflow, which then runs it, so this is not a plain "try again". With an
 * Idempotency-Key it is safe to send again with the same key (the workflow drops a key it has taken); without one,
 * the way to tell is the attempt's processes (a delivered follow-up becomes a `follow_up` process when it runs).
 * Details `{outcome: 'unknown'}`, as a merge's.
 */
export const followUpOutcomeUnknown = (attemptId: string, why: string, keyed: boolean): AppError =>
  new AppError(
    503,
    'SERVICE_UNAVAILABLE',
    `The workflow engine (Temporal) stopped answering while the follow-up was being sent (${why.slice(0, 200)}): it may or may not have been delivered; ` +
      (keyed
        ? 'send it again with the same Idempotency-Key: the attempt runs a follow-up whose key it has already taken only once'
        : `check the attempt's processes (GET /api/processes?attemptId=${attemptId}: a delivered follow-up runs as a new follow_up process, after the run in progress if there is one) before sending it again; ` +
          'a follow-up sent with an Idempotency-Key header can instead be sent again with the same key, and runs once'),
    { outcome: 'unknown' },
  );

/**
 * The 422 of an Idempotency-Key sent again with another body (draft-ietf-httpapi-idempotency-key-header): a key names
 * one request, so the first one's answer is not this one's. Nothing was done for it.
 */
export const idempotencyKeyReused = (first: string, instead: string): AppError =>
  new AppError(
    422,
    'IDEMPOTENCY_KEY_REUSED',
    `The Idempotency-Key was sent before with another body (${first}): a key names one request, so this one was not run. ` +
      `Send it with a new key to ${instead}; a retry of the first request must send the same body.`,
    { 'idempotency-key': 'was sent before with another body' },
  );

/**
 * Queues a follow-up prompt on the attempt's workflow (409 when the workflow is not running: followUpsRefused).
 * Temporal known down: the 503 "try again" (nothing was sent). The signal waits at most temporalCallMs: past it, or
 * its connection failing under it, followUpOutcomeUnknown. Before, it waited on a Temporal that took the request and
 * did not answer for as long as that lasted. An `idempotencyKey` is first bound to the body's hash in PostgreSQL (another
 * body for a key bound before: the 422 idempotencyKeyReused, nothing sent), then travels in the signal: the workflow
 * runs a key once.
 */
export async function sendFollowUp(
  deps: AttemptServiceDeps,
  attemptId: string,
  f: { prompt: string; draftId?: string; source?: string },
  idempotencyKey?: string,
): Promise<void> {
  const a = await getAttempt(deps.db, attemptId);
  if (!a) throw notFound(`Attempt ${attemptId} not found`);
  if (idempotencyKey) {
    const hash = requestHash(f);
    const bound = await bindFollowUpKey(deps.db, attemptId, idempotencyKey, hash);
    if (!bound) throw notFound(`Attempt ${attemptId} not found`);
    if (bound.requestHash !== null && bound.requestHash !== hash) throw idempotencyKeyReused(`a follow-up to attempt ${attemptId}`, 'queue another follow-up');
  }
  const client = await deps.temporal.client();
  try {
    await withinTemporalBound(
      client,
      temporalCallMs(deps),
      () => client.workflow.getHandle(attemptWorkflowId(attemptId)).signal(followUpSignal, idempotencyKey ? { ...f, idempotencyKey } : f),
      (why) => followUpOutcomeUnknown(attemptId, why, idempotencyKey !== undefined),
    );
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) throw await followUpsRefused(deps.db, attemptId);
    throw err;
  }
}

export interface MergeRequest {
  strategy: MergeStrategy;
  message?: string;
  cleanup: boolean;
}

/**
 * POST /api/attempts/:id/merge. Conflicts and empty merges are 409 with the files, a lock file left in the repository
 * a 409 REPOSITORY_LOCKED naming it; the base branch stays untouched.
 */
export const MERGE_OUTCOME_UNKNOWN =
  'The workflow engine (Temporal) stopped answering while the merge was being started or run: it may or may not have been applied; read the attempt (merged) before merging again';

/** How long a merge waits for a worker to finish it, unless `attempts.mergeWaitMs` says. */
export const MERGE_WAIT_MS = 60_000;

/**
 * The 503 of a merge no worker finished within the wait (none running for its host, or every one busy): its
 * workflow was started and runs when a worker takes it, so the merge may still land.
 */
export function mergeNotFinished(attemptId: string, waitMs: number): AppError {
  return new AppError(
    503,
    'SERVICE_UNAVAILABLE',
    `No worker finished the merge of attempt ${attemptId} within ${Math.round(waitMs / 100) / 10} s (no worker is running for its host, or Temporal did not answer): ` +
      'it was started and may still land when a worker takes it, so it may or may not have been applied; read the attempt (merged) before merging again ' +
      '(a merge sent while this one waits is a 409, already running)',
    { outcome: 'unknown', waitedMs: waitMs },
  );
}

export async function mergeAttempt(deps: AttemptServiceDeps, attemptId: string, req: MergeRequest): Promise<MergeWorkflowResult & { ok: true }> {
  const a = await getAttempt(deps.db, attemptId);
  if (!a) throw notFound(`Attempt ${attemptId} not found`);
  await checkMergePreconditions(deps.db, a);
  const task = (await getTask(deps.db, a.task_id)) as TaskRow;
  const project = await getProject(deps.db, task.project_id);
  if (!project?.git_repo_path) throw conflict(`Project of attempt ${attemptId} has no local repository`);
  const input: MergeWorkflowInput = {
    attemptId,
    hostQueue: a.host_queue as string,
    repoPath: project.git_repo_path,
    baseBranch: a.base_branch as string,
    branch: a.branch as string,
    worktreePath: a.worktree_path,
    strategy: req.strategy,
    message: req.message ?? (req.strategy === 'squash' ? task.title : `Merge ${a.branch}: ${task.title}`),
    cleanup: req.cleanup,
  };
  // known down, or not reached: nothing was sent, and the 503 says to try again
  const client = await deps.temporal.client();
  const waitMs = deps.config.file.attempts?.mergeWaitMs ?? MERGE_WAIT_MS;
  const deadline = Date.now() + waitMs;
  let r: MergeWorkflowResult;
  try {
    // the merge and its record are the worker's: a PostgreSQL outage meanwhile is a 503 now, not a wait as long as it
    // lasts; and with no worker to run it, a 503 after attempts.mergeWaitMs, not a wait until one comes
    r = await releasedWhenPostgresDown(deps.dependencies, () =>
      client.connection.withDeadline(deadline, () =>
        client.workflow.execute('mergeWorkflow', {
          workflowId: `merge:${attemptId}`,
          taskQueue: deps.config.temporal.taskQueue,
          args: [input],
          workflowIdConflictPolicy: 'FAIL',
        }),
      ),
    );
  } catch (err) {
    if (err instanceof WorkflowExecutionAlreadyStartedError) throw conflict(`A merge of attempt ${attemptId} is already running`);
    // a merge the repository refused for good, in a way the user can clear (REPOSITORY_LOCKED: a stale lock file)
    const refused = appErrorOfFailure(err);
    if (refused) throw refused;
    // Temporal stopped answering after the start was sent (a freeze, a restart): the merge may have begun and land
    // later, so this is not "try again" (the chaos soak's merge answered 503 twice, then landed)
    if (isTemporalUnreachable(err)) {
      if (Date.now() >= deadline) throw mergeNotFinished(attemptId, waitMs);
      throw new AppError(503, 'SERVICE_UNAVAILABLE', MERGE_OUTCOME_UNKNOWN, { outcome: 'unknown' });
    }
    throw err;
  }
  if (!r.ok) {
    const messages: Record<string, string> = {
      no_changes: 'Nothing to merge: the attempt made no changes',
      conflict: 'Merge conflicts',
      dirty_base: 'The base branch has uncommitted changes',
      missing_branch: 'A branch of the merge does not exist',
    };
    throw new AppError(409, 'CONFLICT', `${messages[r.reason] ?? 'Cannot merge'}: ${r.message}`, { reason: r.reason, files: r.files });
  }
  return r as MergeWorkflowResult & { ok: true };
}

/** An attempt whose worktree and branch its host could not remove, and why (activities/git/removeWorktree.ts). */
export interface CleanupFailure extends CleanupError {
  attemptId: string;
}

/** When a delete that starts now stops waiting for hosts: attempts.deleteWaitMs (default 15 s) from now. */
export function deleteDeadline(deps: Pick<AttemptServiceDeps, 'config'>): number {
  return Date.now() + (deps.config.file.attempts?.deleteWaitMs ?? 15_000);
}

/**
 * What a delete did with the attempts' worktrees and branches: `done`; `failed` when a host tried and git refused
 * (`cleanupErrors` says which and why; they stay until that is cleared, see docs/attempts.md); `pending` when a
 * host did not answer within attempts.deleteWaitMs (its removal runs when its worker is back).
 */
export interface AttemptsCleanup {
  cleanup: 'done' | 'pending' | 'failed';
  cleanupErrors?: CleanupFailure[];
}

/**
 * DELETE /api/attempts/:id: cancels its workflow, removes worktree and branch on their host, deletes the rows.
 * The removal is waited for up to `attempts.deleteWaitMs` (default 15 s). When the host does not do it in that time
 * (its worker is down), the rows are deleted anyway and `cleanup` is `pending`: the removal workflow runs when the
 * host is back, and that host's worktree janitor removes what is left of attempts without rows. When git refused
 * (a stale lock, a locked worktree), `cleanup` is `failed` with the reasons.
 */
export async function deleteAttempt(deps: AttemptServiceDeps, attemptId: string): Promise<AttemptsCleanup> {
  const a = await getAttempt(deps.db, attemptId);
  if (!a) throw notFound(`Attempt ${attemptId} not found`);
  const task = await getTask(deps.db, a.task_id);
  const project = task ? await getProject(deps.db, task.project_id) : undefined;
  const cleanup = await removeAttemptsOnHosts(deps, [{ attempt: a, repoPath: project?.git_repo_path ?? null }]);
  await deleteWithApprovals(deps, { attemptIds: [attemptId] }, (c) => deleteAttemptRow(c, attemptId));
  return cleanup;
}

/** How many attempts a delete cancels and hands to their hosts at a time (removeAttemptsOnHosts). */
const DELETE_CONCURRENCY = 8;

/**
 * Cancels the attempts (those still running or created) and their pending approvals, and removes their worktrees
 * and branches on their hosts (removeAttemptWorkflow on each host's queue). Waits for all of them until `deadline`
 * (attempts.deleteWaitMs after the request came: the cancels and starts before the wait count towards it, so a delete
 * of many attempts on a busy machine still answers in about that time, not that time after its last start): 'failed' when a host answered that git refused (with why), else 'pending' when a host did not answer
 * in time (the removal runs when its worker is back). The caller deletes the rows afterwards, through
 * deleteWithApprovals (approvals requested meanwhile end with the rows). Every delete of attempts (attempt, task,
 * bulk, project) passes here.
 *
 * The row the cancel returns is read under the row lock that also guards recording a new worktree
 * (setAttemptWorktree): either the worktree's host is in it, and it is removed here, or the run making the worktree
 * finds the attempt cancelled and removes it itself (activities/git/worktree.ts); the cleanup is then `pending`.
 * Before, a delete racing the start read the attempt before its host was recorded, answered cleanup "done" and left
 * the worktree and branch behind.
 */
async function removeAttemptsOnHosts(
  deps: AttemptServiceDeps,
  items: { attempt: AttemptRow; repoPath: string | null }[],
  deadline = deleteDeadline(deps),
): Promise<AttemptsCleanup> {
  await cancelApprovalsOfAttempts(deps, items.map((i) => i.attempt.id));
  const removals: Promise<void>[] = [];
  const failures: CleanupFailure[] = [];
  let answered = 0;
  let runsStillPreparing = false;
  // DELETE_CONCURRENCY attempts at a time: one after another, a project of hundreds of attempts took a transaction and
  // two Temporal round trips each before its answer (15 s for a fuzzer's project on a loaded machine)
  await eachLimit(items, DELETE_CONCURRENCY, async ({ attempt: before, repoPath }) => {
    let a = before;
    if (before.status === 'running' || before.status === 'created') {
      a = (await withTransaction(deps.db, (c) => recordAttemptCancelled(c, before.id))) ?? (await getAttempt(deps.db, before.id)) ?? before;
    }
    const hadWorkflow = await cancelWorkflow(deps, a.id);
    if (!a.host_queue && hadWorkflow && (before.status === 'running' || before.status === 'created')) runsStillPreparing = true;
    if (a.host_queue && repoPath && !a.cleaned_up) {
      const client = await deps.temporal.client();
      const args = [{ hostQueue: a.host_queue, repoPath, worktreePath: a.worktree_path, branch: a.branch, attemptId: a.id }];
      // within temporalCallMs (a 503 "try again" past it, nothing deleted yet); a start repeated joins the first
      const handle = await withinTemporalBound(client, temporalCallMs(deps), () =>
        client.workflow.start('removeAttemptWorkflow', { workflowId: `attempt-remove:${a.id}`, taskQueue: deps.config.temporal.taskQueue, args, workflowIdConflictPolicy: 'USE_EXISTING' }),
      );
      const attemptId = a.id;
      removals.push(
        handle.result().then(
          (r: WorktreeRemoval | undefined) => {
            answered++;
            // a worker of the code before answered nothing: it removed them
            if (r && !r.removed && r.error) failures.push({ attemptId, ...r.error });
          },
          () => undefined, // not answered (the host's worker is gone past schedule-to-start): pending
        ),
      );
    }
  });
  if (removals.length > 0) {
    let timer: NodeJS.Timeout | undefined;
    const waited = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, Math.max(0, deadline - Date.now()));
    });
    await Promise.race([Promise.all(removals), waited]);
    clearTimeout(timer);
  }
  if (failures.length > 0) return { cleanup: 'failed', cleanupErrors: [...failures] };
  return { cleanup: runsStillPreparing || answered < removals.length ? 'pending' : 'done' };
}

/** The cleanup of several deletes as one: failed when any failed (all their reasons), else pending when any is. */
export function combinedCleanup(parts: AttemptsCleanup[]): AttemptsCleanup {
  const errors = parts.flatMap((p) => p.cleanupErrors ?? []);
  if (errors.length > 0) return { cleanup: 'failed', cleanupErrors: errors };
  return { cleanup: parts.some((p) => p.cleanup !== 'done') ? 'pending' : 'done' };
}

/**
 * Before DELETE /api/tasks/:id, the bulk delete and DELETE /api/projects/:id delete the rows: cancels the tasks'
 * attempts and removes their worktrees and branches on their hosts, as DELETE /api/attempts/:id does.
 */
export async function removeAttemptsOfTasks(deps: AttemptServiceDeps, taskIds: string[], deadline = deleteDeadline(deps)): Promise<AttemptsCleanup> {
  if (taskIds.length === 0) return { cleanup: 'done' };
  const { rows } = await deps.db.query<{ id: string; repo_path: string | null }>(
    `SELECT a.id, p.git_repo_path AS repo_path FROM attempts a JOIN tasks t ON t.id = a.task_id JOIN projects p ON p.id = t.project_id
      WHERE a.task_id = ANY($1::text[]) ORDER BY a.created_at`,
    [taskIds],
  );
  const items: { attempt: AttemptRow; repoPath: string | null }[] = [];
  for (const r of rows) {
    const a = await getAttempt(deps.db, r.id);
    if (a) items.push({ attempt: a, repoPath: r.repo_path });
  }
  return removeAttemptsOnHosts(deps, items, deadline);
}

/** removeAttemptsOfTasks for all tasks of a project. */
export async function removeAttemptsOfProject(deps: AttemptServiceDeps, projectId: string, deadline = deleteDeadline(deps)): Promise<AttemptsCleanup> {
  const { rows } = await deps.db.query<{ id: string }>('SELECT id FROM tasks WHERE project_id = $1', [projectId]);
  return removeAttemptsOfTasks(deps, rows.map((r) => r.id), deadline);
}
