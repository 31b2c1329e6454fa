/**
 * attemptWorkflow (`attempt:<attemptId>`): prepare the worktree, run the agent, commit its changes on the attempt
 * branch, record the outcome; then stay open for follow-up prompts until closed, cancelled or idle.
 * Cancellation is workflow cancellation (the API records `cancelled` first; the agent's process group is killed).
 */
import {
  ActivityFailure,
  ApplicationFailure,
  allHandlersFinished,
  CancellationScope,
  condition,
  continueAsNew,
  isCancellation,
  proxyActivities,
  setHandler,
  uuid4,
  workflowInfo,
  ActivityCancellationType,
  patched,
  upsertSearchAttributes,
} from '@temporalio/workflow';
import type { Activities } from '../activities';
import type { PreparedWorktree } from '../activities/git/worktree';
import type { RunAgentResult } from '../activities/agent/runAgent';
import { closeAttemptSignal, followUpSignal, progressQuery, stopProcessSignal, TAKEN_FOLLOW_UP_KEYS, type AttemptProgress, type FollowUpRequest } from './attemptMessages';
import { failureMessage as message } from './failureMessage';
import { ArmadaAgent, ArmadaAttemptId, ArmadaAttemptStatus, ArmadaTaskId } from '../lib/temporal/searchAttributes';
import { POSTGRES_OUTAGE_WAIT_MS } from '../lib/db/outage';

export interface AttemptWorkflowInput {
  attemptId: string;
  taskId: string;
  llm: string;
  /** id of the first agent process (returned by the start endpoint) */
  processId: string;
  prompt: string;
  /** commit message of the agent's changes */
  commitMessage: string;
  timeoutMs: number;
  heartbeatTimeoutMs: number;
  idleTimeoutMs: number;
  requestedAt: string;
  /** continue-as-new after this many follow-ups in one run (besides Temporal's suggestion); absent = no such bound */
  continueAsNewEvery?: number;
  /**
   * The code paths this run takes, fixed at its start (ATTEMPT_PATHS for every start since): 2 means every patch up
   * to `continue-as-new-keeps-messages` is in effect, 3 also `agent-run-records-outcome` and `follow-up-resumes-in-one`, with no `patched()` call and
   * so no marker and no TemporalChangeVersion search attribute update per patch in its history; absent (runs started
   * before), each patch is asked with `patched()`, as is a patch newer than the run's `paths`.
   */
  paths?: number;
  /** state carried over by continue-as-new */
  carried?: {
    worktree: PreparedWorktree;
    queue: FollowUpRequest[];
    processIds: string[];
    lastOutcome: AttemptProgress['lastOutcome'];
    /** a closeAttempt received before continue-as-new: the next run closes at once, as this one would have */
    closing?: boolean;
    /** the follow-up keys taken so far, oldest first (at most TAKEN_FOLLOW_UP_KEYS); absent in runs continued before keys existed */
    takenKeys?: string[];
  };
}

/**
 * Whether a patch of this workflow is in effect: always in a run started with `paths` ≥ `since` (its input decides,
 * so replay takes the same branch), else as `patched()` answers, for the histories of runs started before. Every patch
 * up to `continue-as-new-keeps-messages` is in effect from paths 2; AGENT_RUN_RECORDS_PATCH and FOLLOW_UP_RESUMES_PATCH from 3.
 */
function inEffect(input: AttemptWorkflowInput, patchId: string, since = 2): boolean {
  return (input.paths ?? 0) >= since || patched(patchId);
}

const projection = proxyActivities<Activities>({
  startToCloseTimeout: '30s',
  retry: { initialInterval: '1s', maximumInterval: '30s', maximumAttempts: 20 }, // a projection write retries until Postgres is back
});
const { prepareWorktree } = proxyActivities<Activities>({
  startToCloseTimeout: '35 minutes',
  // the activity heartbeats throughout (activities/keepAlive.ts): a lost worker is noticed in seconds
  heartbeatTimeout: '15 seconds',
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '10s', maximumAttempts: 5 },
});

/**
 * The attempt's latest outcome in the ArmadaAttemptStatus search attribute: the workflow stays open for follow-ups,
 * so its own status cannot say that the agent failed (docs/operations.md#search-attributes).
 */
function showStatus(input: AttemptWorkflowInput, status: 'running' | NonNullable<AttemptProgress['lastOutcome']>): void {
  if (!inEffect(input, 'search-attributes-v1')) return;
  // the ids too: an attempt started before the attributes existed becomes findable by its task at its next outcome
  upsertSearchAttributes([
    { key: ArmadaAttemptStatus, value: status },
    { key: ArmadaTaskId, value: input.taskId },
    { key: ArmadaAttemptId, value: input.attemptId },
    { key: ArmadaAgent, value: input.llm },
  ]);
}

/** Worktree activities run on the worker of the host that made the worktree. */
function hostActivities(hostQueue: string, input: AttemptWorkflowInput) {
  const agent = proxyActivities<Activities>({
    taskQueue: hostQueue,
    // the run, plus time to wait for PostgreSQL before the agent starts, after it ended and for the commit's record
    // (an outage is waited out inside the activity: activities/untilPostgresAnswers.ts), plus the recording
    startToCloseTimeout: input.timeoutMs + 3 * POSTGRES_OUTAGE_WAIT_MS + 5 * 60_000,
    heartbeatTimeout: input.heartbeatTimeoutMs,
    // a host whose worker never comes back: give up after this long without a worker picking the run up
    scheduleToStartTimeout: '15 minutes',
    cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
    // two retries: a run lost with its worker (heartbeat timeout) restarts on the restarted worker, and a restart
    // whose reset of the worktree a git lock refused (WorktreeLocked: the agent was not started) gets one more try;
    // a PostgreSQL outage costs no try (the activity waits for it). Activity options: no command of a history changes
    retry: { initialInterval: '1s', maximumAttempts: 3 },
  });
  const git = proxyActivities<Activities>({
    taskQueue: hostQueue,
    startToCloseTimeout: '5 minutes',
    heartbeatTimeout: '15 seconds',
    scheduleToStartTimeout: '15 minutes',
    retry: { initialInterval: '1s', maximumInterval: '20s', maximumAttempts: 5 },
  });
  // the commit and the recorded outcome (lean-attempt-v1): git failures give up after COMMIT_TRIES inside the
  // activity (recorded as the attempt's failure); a database outage is retried like any projection write
  const commitAndRecord = proxyActivities<Activities>({
    taskQueue: hostQueue,
    startToCloseTimeout: '5 minutes',
    heartbeatTimeout: '15 seconds',
    scheduleToStartTimeout: '15 minutes',
    retry: { initialInterval: '1s', maximumInterval: '30s', maximumAttempts: 20 },
  });
  return { runAgent: agent.runAgent, commitChanges: git.commitChanges, removeWorktree: git.removeWorktree, commitAndRecordOutcome: commitAndRecord.commitAndRecordOutcome };
}

/** Patch id: an attempt found cancelled or deleted by prepareWorktree ends the run as cancelled (was: failed). */
export const ATTEMPT_GONE_PATCH = 'attempt-gone-is-cancelled';

/**
 * Patch id: the workflow cancelled from Temporal's side while the worktree is made records the attempt's cancel
 * (recordAttemptCancelledInTemporal; before, the attempt stayed `running` and its task `in_progress`). Asked with
 * `patched()` in every run, and only on that cancel: a run cancelled so before replays as it ran.
 */
export const CANCEL_WHILE_PREPARING_PATCH = 'cancel-while-preparing-recorded';

/** prepareWorktree's failure for an attempt cancelled or deleted while its worktree was made (activities/git/worktree.ts). */
function isAttemptGone(err: unknown): boolean {
  return err instanceof ActivityFailure && err.cause instanceof ApplicationFailure && err.cause.type === 'AttemptGone';
}

/** Patch id of the lean attempt path: one activity commits and records the outcome (was commitChanges + recordAttemptOutcome). */
export const LEAN_ATTEMPT_PATCH = 'lean-attempt-v1';

/**
 * Patch id: runAgent itself commits the agent's changes and records the outcome once its agent ended (its input
 * carries `record`, its result the `outcome`), so a run ends with one activity and one workflow task, not two of
 * each (docs/attempts.md). In effect from paths 3 (ATTEMPT_PATHS). A result without `outcome` (a worker from before,
 * which ignores `record`) takes the commitAndRecordOutcome path as before.
 */
export const AGENT_RUN_RECORDS_PATCH = 'agent-run-records-outcome';

/** Patch id: a follow-up starts with one activity (resumeAttempt: gone, or running again), not attemptStatus + recordAttemptResumed. In effect from paths 3. */
export const FOLLOW_UP_RESUMES_PATCH = 'follow-up-resumes-in-one';

export async function attemptWorkflow(input: AttemptWorkflowInput): Promise<AttemptProgress['lastOutcome']> {
  const queue: FollowUpRequest[] = [...(input.carried?.queue ?? [])];
  let closing = input.carried?.closing ?? false;
  const state: AttemptProgress = {
    attemptId: input.attemptId,
    stage: input.carried ? 'idle' : 'preparing',
    currentProcessId: null,
    processIds: [...(input.carried?.processIds ?? [])],
    pendingFollowUps: queue.length,
    worktreePath: input.carried?.worktree.worktreePath ?? null,
    branch: input.carried?.worktree.branch ?? null,
    lastOutcome: input.carried?.lastOutcome ?? null,
  };
  // the follow-up keys taken (oldest first, the last TAKEN_FOLLOW_UP_KEYS): a follow-up whose key is among them is a
  // repeat of one this attempt already has (a client's retry after a 503 whose outcome was unknown) and is dropped.
  // No command depends on it beyond the follow-up not run; a history without keys replays as it ran
  const takenKeys: string[] = [...(input.carried?.takenKeys ?? [])];
  const taken = new Set(takenKeys);
  setHandler(followUpSignal, (f) => {
    const key = f.idempotencyKey;
    if (key) {
      if (taken.has(key)) return;
      taken.add(key);
      takenKeys.push(key);
      if (takenKeys.length > TAKEN_FOLLOW_UP_KEYS) taken.delete(takenKeys.shift() as string);
    }
    queue.push(f);
    state.pendingFollowUps = queue.length;
  });
  setHandler(stopProcessSignal, async ({ processId }) => {
    // the row moves to stopped (a no-op when the API already did it); the running runAgent watches that row
    await projection.requestProcessStop({ processId });
  });
  setHandler(closeAttemptSignal, () => {
    closing = true;
  });
  setHandler(progressQuery, () => ({ ...state, pendingFollowUps: queue.length }));

  let worktree = input.carried?.worktree;

  /** One agent process, its commit and the recorded outcome; 'cancelled' when the attempt was cancelled. */
  const runOnce = async (wt: PreparedWorktree, processId: string, prompt: string, kind: 'initial' | 'follow_up') => {
    const host = hostActivities(wt.hostQueue, input);
    state.stage = 'running';
    state.currentProcessId = processId;
    state.processIds.push(processId);
    const folded = inEffect(input, AGENT_RUN_RECORDS_PATCH, 3);
    let r: RunAgentResult;
    try {
      r = await host.runAgent({
        attemptId: input.attemptId,
        taskId: input.taskId,
        processId,
        llm: input.llm,
        kind,
        prompt,
        worktreePath: wt.worktreePath,
        timeoutMs: input.timeoutMs,
        requestedAt: kind === 'initial' ? input.requestedAt : undefined,
        ...(folded ? { record: { repoPath: wt.repoPath, baseCommit: wt.baseCommit, message: input.commitMessage } } : {}),
      });
    } catch (err) {
      // a follow-up's run that failed for good (its tries spent: a lost host, PostgreSQL away past the waits) is the
      // attempt's failure, recorded here, and the attempt stays open for the next follow-up; before, the workflow
      // failed and left the attempt running (a first run's failure is recorded by the caller, as before)
      if (kind !== 'follow_up' || !folded || isCancellation(err)) throw err;
      state.currentProcessId = null;
      state.stage = 'recording';
      await projection.recordAttemptOutcome({ attemptId: input.attemptId, status: 'failed', error: `agent run failed: ${message(err)}`, summary: '' });
      showStatus(input, 'failed');
      return 'failed' as const;
    }
    state.currentProcessId = null;
    if (r.status === 'cancelled') return 'cancelled' as const;
    if (r.outcome) {
      // committed and recorded by runAgent (agent-run-records-outcome)
      showStatus(input, r.outcome);
      return r.outcome;
    }
    state.stage = 'committing';
    if (inEffect(input, LEAN_ATTEMPT_PATCH)) {
      let outcome: 'completed' | 'failed';
      try {
        outcome = await host.commitAndRecordOutcome({
          attemptId: input.attemptId,
          worktreePath: wt.worktreePath,
          repoPath: wt.repoPath,
          baseCommit: wt.baseCommit,
          message: input.commitMessage,
          agentStatus: r.status,
          agentError: r.error,
          summary: r.summary,
        });
      } catch (err) {
        if (isCancellation(err)) throw err;
        // the host could not record it (its retries ran out): the failure is recorded from here
        state.stage = 'recording';
        const error = r.error ?? `recording the run's outcome failed: ${message(err)}`;
        await projection.recordAttemptOutcome({ attemptId: input.attemptId, status: 'failed', error, summary: r.summary });
        outcome = 'failed';
      }
      // the outcome in ArmadaAttemptStatus, as on the path before (search-attributes-v1)
      showStatus(input, outcome);
      return outcome;
    }
    let error = r.error;
    try {
      await host.commitChanges({ attemptId: input.attemptId, worktreePath: wt.worktreePath, baseCommit: wt.baseCommit, message: input.commitMessage });
    } catch (err) {
      if (isCancellation(err)) throw err;
      error = error ?? `committing the agent's changes failed: ${message(err)}`;
    }
    // a stopped process ends the run early on purpose: its changes are kept for review
    const status = (r.status === 'completed' || r.status === 'stopped') && !error ? 'completed' : 'failed';
    state.stage = 'recording';
    await projection.recordAttemptOutcome({ attemptId: input.attemptId, status, error, summary: r.summary });
    showStatus(input, status);
    return status;
  };

  if (!worktree) {
    try {
      worktree = await prepareWorktree({ attemptId: input.attemptId, processId: input.processId });
      state.worktreePath = worktree.worktreePath;
      state.branch = worktree.branch;
      state.lastOutcome = await runOnce(worktree, input.processId, input.prompt, 'initial');
    } catch (err) {
      // prepareWorktree found the attempt cancelled (or deleted) when it came to record the worktree: the API's cancel
      // reached the row before the workflow, so this is the attempt's cancellation, not a failure (it showed 'failed').
      // Asked with patched() only here: a history from before that failed so replays as it ran.
      const gone = !isCancellation(err) && isAttemptGone(err) && patched(ATTEMPT_GONE_PATCH);
      if (isCancellation(err) || gone) {
        state.lastOutcome = 'cancelled';
        showStatus(input, 'cancelled');
        if (gone) return 'cancelled';
        // cancelled before the worktree was made: no runAgent records the cancel (a cancel from Temporal's side reaches
        // the attempt's row only so; after the API's cancel, a no-op)
        if (!worktree && patched(CANCEL_WHILE_PREPARING_PATCH)) {
          await CancellationScope.nonCancellable(() => projection.recordAttemptCancelledInTemporal({ attemptId: input.attemptId, processId: input.processId }));
        }
        throw err;
      }
      state.lastOutcome = 'failed';
      await CancellationScope.nonCancellable(() =>
        projection.recordAttemptOutcome({ attemptId: input.attemptId, status: 'failed', error: message(err), summary: '' }),
      );
      showStatus(input, 'failed');
      if (!worktree) return 'failed';
    }
  }
  /** The attempt row was deleted with its task or project: remove what it left on disk. */
  const cleanupIfDeleted = async (wt: PreparedWorktree) => {
    if (!inEffect(input, 'cleanup-deleted-attempt')) return;
    if ((await projection.attemptStatus({ attemptId: input.attemptId })) !== null) return;
    await CancellationScope.nonCancellable(() =>
      hostActivities(wt.hostQueue, input).removeWorktree({
        attemptId: null,
        mergeMarkersOf: input.attemptId,
        repoPath: wt.repoPath,
        worktreePath: wt.worktreePath,
        branch: wt.branch,
        deleteBranch: true,
      }),
    );
  };

  if (state.lastOutcome === 'cancelled') {
    showStatus(input, 'cancelled');
    if (worktree) await cleanupIfDeleted(worktree);
    return 'cancelled';
  }

  // follow-ups, one after another, until closed or idle
  let followUpsThisRun = 0;
  for (;;) {
    state.stage = 'idle';
    const woke = await condition(() => queue.length > 0 || closing, input.idleTimeoutMs);
    if (!woke || closing) break;
    followUpsThisRun++;
    const next = queue.shift() as FollowUpRequest;
    state.pendingFollowUps = queue.length;
    if (inEffect(input, FOLLOW_UP_RESUMES_PATCH, 3)) {
      if (!(await projection.resumeAttempt({ attemptId: input.attemptId }))) {
        await cleanupIfDeleted(worktree);
        break;
      }
    } else {
      if ((await projection.attemptStatus({ attemptId: input.attemptId })) === null) {
        await cleanupIfDeleted(worktree);
        break;
      }
      await projection.recordAttemptResumed({ attemptId: input.attemptId });
    }
    showStatus(input, 'running');
    const outcome = await runOnce(worktree, uuid4(), next.prompt, 'follow_up');
    state.lastOutcome = outcome;
    if (outcome === 'cancelled') {
      showStatus(input, 'cancelled');
      await cleanupIfDeleted(worktree);
      return 'cancelled';
    }
    const runIsFull = input.continueAsNewEvery !== undefined && followUpsThisRun >= input.continueAsNewEvery;
    if (workflowInfo().continueAsNewSuggested || workflowInfo().historyLength > 5000 || runIsFull) {
      await continueAsNewKeepingMessages(input, worktree, queue, state, () => closing, takenKeys);
    }
  }
  state.stage = 'done';
  return state.lastOutcome;
}

/**
 * Continue-as-new without losing a message: a handler still running (stopProcess awaits an activity) finishes
 * first, and what the handlers left (queued follow-ups, a close) is read after that wait, so it goes into the new
 * run's input. Signals that arrive while the continue-as-new command is being sent make Temporal retry the workflow
 * task, which then carries them too.
 */
async function continueAsNewKeepingMessages(
  input: AttemptWorkflowInput,
  worktree: PreparedWorktree,
  queue: FollowUpRequest[],
  state: AttemptProgress,
  closing: () => boolean,
  takenKeys: string[],
): Promise<never> {
  const keep = inEffect(input, 'continue-as-new-keeps-messages');
  if (keep) await condition(allHandlersFinished);
  return continueAsNew<typeof attemptWorkflow>({
    ...input,
    carried: {
      worktree,
      queue,
      processIds: state.processIds.slice(-50),
      lastOutcome: state.lastOutcome,
      ...(keep && closing() ? { closing: true } : {}),
      // read after the handlers finished, as the queue: a key taken meanwhile goes along with its follow-up
      ...(takenKeys.length ? { takenKeys } : {}),
    },
  });
}
