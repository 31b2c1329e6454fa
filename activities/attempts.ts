/** The attempt engine's activities, built from the worker's dependencies. */
import { attemptMetrics } from '../lib/attempts/metrics';
import { recordAttemptFinished, recordAttemptMerged, recordAttemptResumed, requestProcessEnd } from '../lib/attempts/projections';
import { withTransaction } from '../lib/db/pool';
import { attemptDurationSeconds, getAttempt } from '../lib/db/attempts';
import { runAgent, type RunAgentInput } from './agent/runAgent';
import { mergeBranch, type MergeInput } from './git/mergeAttempt';
import { pushBranch, type PushBranchInput } from './git/pushBranch';
import { readWorktree, type WorktreeRead } from '../lib/attempts/readWorktree';
import { commitChanges, prepareWorktree, removeWorktree } from './git/worktree';
import { keepAlive } from './keepAlive';
import type { ActivityDeps } from './index';

export function createAttemptActivities(deps: ActivityDeps) {
  const m = attemptMetrics(deps.metrics.registry);
  return {
    prepareWorktree: (input: { attemptId: string; processId: string }) => keepAlive(() => prepareWorktree(deps, input)),
    runAgent: (input: RunAgentInput) => runAgent(deps, input),
    commitChanges: (input: { attemptId: string; worktreePath: string; baseCommit: string; message: string }) => keepAlive(() => commitChanges(deps, input)),
    removeWorktree: (input: { attemptId: string | null; repoPath: string; worktreePath: string | null; branch: string | null; deleteBranch: boolean }) =>
      keepAlive(() => removeWorktree(deps, input)),
    /** A read of a worktree on its host, for API replicas elsewhere (hostReadWorkflow). */
    readWorktree: (request: WorktreeRead) => readWorktree(request),
    /** create-pr's push of the attempt branch, on the attempt's host (pushBranchWorkflow). */
    pushBranch: (input: PushBranchInput) => keepAlive(() => pushBranch(deps, input)),
    mergeBranch: (input: MergeInput) => keepAlive(() => mergeBranch(input, { faults: deps.faults })),
    /** running → completed | failed, with events and the task status rule. */
    async recordAttemptOutcome(input: { attemptId: string; status: 'completed' | 'failed'; error: string | null; summary: string }): Promise<boolean> {
      const a = await recordAttemptFinished(deps.db, input.attemptId, input.status, input.error, input.summary);
      if (a) {
        m.attempts.inc({ llm: a.llm, status: a.status });
        m.duration.observe({ llm: a.llm, status: a.status }, attemptDurationSeconds(a) ?? 0);
      }
      return Boolean(a);
    },
    /** Marks the attempt merged (and its task completed); returns mergedAt. */
    async recordAttemptMergedActivity(input: { attemptId: string; commitSha: string; cleanup: boolean }): Promise<string> {
      const a = await recordAttemptMerged(deps.db, input.attemptId, input.commitSha, input.cleanup);
      return (a?.merged_at ?? new Date()).toISOString();
    },
    /** The stopProcess signal: marks the process stopped (no-op when it is not running); its runAgent stops the group. */
    async requestProcessStop(input: { processId: string }): Promise<boolean> {
      return Boolean(await withTransaction(deps.db, (c) => requestProcessEnd(c, input.processId, 'stopped')));
    },
    async recordAttemptResumed(input: { attemptId: string }): Promise<void> {
      await recordAttemptResumed(deps.db, input.attemptId);
    },
    /** The attempt's status now (a workflow asks before doing more work for an attempt deleted or cancelled meanwhile). */
    async attemptStatus(input: { attemptId: string }): Promise<string | null> {
      return (await getAttempt(deps.db, input.attemptId))?.status ?? null;
    },
  };
}
