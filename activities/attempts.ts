/** The attempt engine's activities, built from the worker's dependencies. */
import { attemptMetrics } from '../lib/attempts/metrics';
import { recordAttemptCancelled, recordAttemptFinished, recordAttemptMerged, recordAttemptResumed, requestProcessEnd, resumeAttemptIfPresent } from '../lib/attempts/projections';
import { appendLogs } from '../lib/db/processes';
import { isPostgresUnavailable, withTransaction } from '../lib/db/pool';
import { attemptDurationSeconds, getAttempt } from '../lib/db/attempts';
import { runAgent, type RunAgentInput, type RunAgentResult } from './agent/runAgent';
import { mergeBranch, type MergeInput } from './git/mergeAttempt';
import { pushBranch, type PushBranchInput } from './git/pushBranch';
import { MAX_REMOTE_DIFF_BYTES, readWorktree, type WorktreeRead } from '../lib/attempts/readWorktree';
import { isAppError } from '../lib/errors';
import { commitChanges, prepareWorktree, withDiskFullCause } from './git/worktree';
import { removeWorktree, type RemoveWorktreeInput } from './git/removeWorktree';
import { commitWorktree, WorkOffTheAttempt } from './git/commitWorktree';
import type { AttemptChanges } from '../lib/db/attempts';
import { Context } from '@temporalio/activity';
import { appErrorFailure } from '../lib/temporal/appErrorFailure';
import { keepAlive } from './keepAlive';
import { lazyEncryptionKey } from '../lib/keys';
import { untilPostgresAnswers } from './untilPostgresAnswers';
import { faultPoint } from '../lib/faults';
import type { ActivityDeps } from './index';

/** Tries of commitAndRecordOutcome's git part before the outcome is recorded as failed with the commit's error. */
export const COMMIT_TRIES = 5;

export interface CommitAndRecordInput {
  attemptId: string;
  worktreePath: string;
  repoPath: string;
  baseCommit: string;
  message: string;
  agentStatus: Exclude<RunAgentResult['status'], 'cancelled'>;
  agentError: string | null;
  summary: string;
}

export function createAttemptActivities(deps: ActivityDeps) {
  const m = attemptMetrics(deps.metrics.registry);
  const encryptionKey = lazyEncryptionKey(deps.config);
  /** running → completed | failed (with the run's change statistics), with events, the task status rule and metrics. */
  const recordOutcome = async (attemptId: string, status: 'completed' | 'failed', error: string | null, summary: string, changes?: AttemptChanges) => {
    const a = await recordAttemptFinished(deps.db, attemptId, status, error, summary, changes);
    if (a) {
      m.attempts.inc({ llm: a.llm, status: a.status });
      m.duration.observe({ llm: a.llm, status: a.status }, attemptDurationSeconds(a) ?? 0);
    }
    return a;
  };
  /**
   * The commit of a run's changes and its recorded outcome, one try: a git failure is thrown for another try, or,
   * on the `lastTry`, recorded as the attempt's failure; PostgreSQL away is waited out (then thrown).
   */
  const commitAndRecordOnce = (processId: string | undefined, input: CommitAndRecordInput, lastTry: boolean): Promise<'completed' | 'failed'> =>
    untilPostgresAnswers(async () => {
      let error = input.agentError;
      let changes: AttemptChanges | undefined;
      try {
        changes = await commitWorktree({
          ...input,
          attemptBranch: async () => (await getAttempt(deps.db, input.attemptId))?.branch ?? null,
          // a stale lock of the worktree is removed only with a run's log to say so in (the run has ended: its lines
          // are written, this one comes after them); the older commitAndRecordOutcome path has no process id
          onStaleLockRemoved:
            processId === undefined
              ? undefined
              : async (message) => {
                  await appendLogs(deps.db, processId, input.attemptId, [{ level: 'warn', message, timestamp: new Date().toISOString(), source: 'armada' }]);
                },
        });
      } catch (err) {
        // PostgreSQL away (the attempt's branch is read from it): waited out, never the commit's failure
        if (isPostgresUnavailable(err)) throw err;
        if (!(err instanceof WorkOffTheAttempt) && !lastTry) throw err;
        if (!error) {
          // a full disk is said first (git's words may not say it), with what brings the changes in
          const why = withDiskFullCause(err, [input.worktreePath, input.repoPath], 'send a follow-up: its run commits them too (they stay in the worktree)');
          error = err instanceof WorkOffTheAttempt ? err.message : `committing the agent's changes failed: ${(why as Error).message}`;
        }
      }
      // a stopped process ends the run early on purpose: its changes are kept for review
      const status = (input.agentStatus === 'completed' || input.agentStatus === 'stopped') && !error ? 'completed' : 'failed';
      await recordOutcome(input.attemptId, status, error, input.summary, changes);
      return status;
    });
  /** A process's commit-and-record running in this worker (a retry of its runAgent arriving meanwhile waits for it). */
  const recording = new Map<string, Promise<'completed' | 'failed'>>();
  /**
   * After an agent run that asked for it (agent-run-records-outcome): the commit and the recorded outcome inside the
   * runAgent activity, with COMMIT_TRIES tries of the git part (1 s, 2 s, 4 s, 8 s apart), the last one's failure
   * recorded as the attempt's. A database outage is waited out (untilPostgresAnswers) and, past that, thrown: the
   * activity's retry finds the run ended (its process row) and comes back here without running the agent again.
   */
  const commitAndRecordAfterRun = async (processId: string, input: CommitAndRecordInput): Promise<'completed' | 'failed'> => {
    const earlier = recording.get(processId);
    if (earlier) {
      const outcome = await keepAlive(() => earlier).catch(() => undefined);
      if (outcome) return outcome;
    }
    const ctx = Context.current();
    const work = (async () => {
      for (let tryNo = 1; ; tryNo++) {
        try {
          return await commitAndRecordOnce(processId, input, tryNo >= COMMIT_TRIES);
        } catch (err) {
          if (tryNo >= COMMIT_TRIES || isPostgresUnavailable(err) || ctx.cancellationSignal.aborted) throw err;
          await ctx.sleep(1000 * 2 ** (tryNo - 1));
        }
      }
    })();
    recording.set(processId, work);
    try {
      return await keepAlive(() => work);
    } finally {
      if (recording.get(processId) === work) recording.delete(processId);
    }
  };
  return {
    prepareWorktree: (input: { attemptId: string; processId: string }) => keepAlive(() => untilPostgresAnswers(() => prepareWorktree(deps, input))),
    /** One agent run; with `record` (agent-run-records-outcome), also its commit and the attempt's recorded outcome. */
    async runAgent(input: RunAgentInput): Promise<RunAgentResult> {
      const r = await runAgent(deps, input);
      // a taken-over try commits and records nothing: the worktree and the attempt are the later try's now (before,
      // a paused worker resumed after the takeover recorded its killed agent as the attempt's failure over the new run)
      if (!input.record || r.status === 'cancelled' || r.takenOver) return r;
      const { record } = input;
      await faultPoint(deps.faults, 'runAgent.afterRun', { processId: input.processId, attempt: Context.current().info.attempt, status: r.status });
      const outcome = await commitAndRecordAfterRun(input.processId, {
        attemptId: input.attemptId,
        worktreePath: input.worktreePath,
        repoPath: record.repoPath,
        baseCommit: record.baseCommit,
        message: record.message,
        agentStatus: r.status,
        agentError: r.error,
        summary: r.summary,
      });
      return { ...r, outcome };
    },
    /** Before lean-attempt-v1: the commit alone (histories of running attempts still schedule it). */
    commitChanges: (input: { attemptId: string; worktreePath: string; baseCommit: string; message: string }) =>
      keepAlive(() => untilPostgresAnswers(() => commitChanges(deps, input))),
    /** Removes an attempt's worktree (and branch); what git refused is in its outcome, not thrown (removeWorktree.ts). */
    removeWorktree: (input: RemoveWorktreeInput) => keepAlive(() => untilPostgresAnswers(() => removeWorktree(deps, input))),
    /**
     * A read of a worktree on its host, for API replicas elsewhere (hostReadWorkflow): a diff fitted within one
     * payload. A read that fails for good (an AppError: the diff cannot be read or is too large) is not retried and
     * reaches the API as that error (lib/attempts/hostReads.ts).
     */
    readWorktree: async (request: WorktreeRead) => {
      try {
        return await readWorktree(request, { maxDiffBytes: MAX_REMOTE_DIFF_BYTES });
      } catch (err) {
        if (!isAppError(err)) throw err;
        throw appErrorFailure(err);
      }
    },
    /** create-pr's push of the attempt branch, on the attempt's host (pushBranchWorkflow). */
    pushBranch: (input: PushBranchInput) => keepAlive(() => pushBranch({ ...deps, encryptionKey }, input)),
    mergeBranch: (input: MergeInput) => keepAlive(() => mergeBranch(input, { faults: deps.faults })),
    /** running → completed | failed, with events and the task status rule. */
    async recordAttemptOutcome(input: { attemptId: string; status: 'completed' | 'failed'; error: string | null; summary: string }): Promise<boolean> {
      return Boolean(await untilPostgresAnswers(() => recordOutcome(input.attemptId, input.status, input.error, input.summary)));
    },
    /**
     * The workflow cancelled from Temporal's side (`temporal workflow cancel`, its UI) while the attempt's worktree was
     * made (patch `cancel-while-preparing-recorded`): the attempt's cancel, recorded as the API's cancel records it,
     * with a line in its first process's log. A no-op when the API's cancel (or a delete) came first. True when recorded.
     */
    async recordAttemptCancelledInTemporal(input: { attemptId: string; processId: string }): Promise<boolean> {
      const a = await untilPostgresAnswers(() =>
        withTransaction(deps.db, async (c) => {
          // the attempt's row first (lock order: the attempt, then its task), while it still runs
          const { rows } = await c.query(`SELECT id FROM attempts WHERE id = $1 AND status IN ('created', 'running') FOR UPDATE`, [input.attemptId]);
          if (!rows.length) return undefined;
          const message = "the workflow was cancelled in Temporal while the attempt's worktree was being made; the attempt is recorded cancelled";
          await appendLogs(c, input.processId, input.attemptId, [{ level: 'warn', message, timestamp: new Date().toISOString(), source: 'armada' }]);
          return recordAttemptCancelled(c, input.attemptId);
        }),
      );
      if (a) m.attempts.inc({ llm: a.llm, status: 'cancelled' });
      return !!a;
    },
    /**
     * After an agent run (lean-attempt-v1): commit the worktree's changes on the attempt branch and record the
     * outcome with the change statistics, in one activity on the attempt's host and one transaction. A commit that
     * still fails on the last of COMMIT_TRIES is recorded as the attempt's failure; a database error is retried.
     * Idempotent: a retry finds the tree committed, and the outcome is written only while the attempt runs.
     */
    commitAndRecordOutcome: (input: CommitAndRecordInput): Promise<'completed' | 'failed'> =>
      keepAlive(() => commitAndRecordOnce(undefined, input, Context.current().info.attempt >= COMMIT_TRIES)),
    /** Marks the attempt merged (and its task completed); returns mergedAt. */
    async recordAttemptMergedActivity(input: { attemptId: string; commitSha: string; cleanup: boolean }): Promise<string> {
      const a = await untilPostgresAnswers(() => recordAttemptMerged(deps.db, input.attemptId, input.commitSha, input.cleanup));
      return (a?.merged_at ?? new Date()).toISOString();
    },
    /** The stopProcess signal: marks the process stopped (no-op when it is not running); its runAgent stops the group. */
    async requestProcessStop(input: { processId: string }): Promise<boolean> {
      return Boolean(await untilPostgresAnswers(() => withTransaction(deps.db, (c) => requestProcessEnd(c, input.processId, 'stopped'))));
    },
    async recordAttemptResumed(input: { attemptId: string }): Promise<void> {
      await untilPostgresAnswers(() => recordAttemptResumed(deps.db, input.attemptId));
    },
    /** A follow-up's start (follow-up-resumes-in-one): false when the attempt is gone, else it is running again. */
    async resumeAttempt(input: { attemptId: string }): Promise<boolean> {
      return untilPostgresAnswers(() => resumeAttemptIfPresent(deps.db, input.attemptId));
    },
    /** The attempt's status now (a workflow asks before doing more work for an attempt deleted or cancelled meanwhile). */
    async attemptStatus(input: { attemptId: string }): Promise<string | null> {
      return (await untilPostgresAnswers(() => getAttempt(deps.db, input.attemptId)))?.status ?? null;
    },
  };
}
