/**
 * Test-only fault injection. Each point sits right after an activity's side effect (or, for the push, right before
 * it), where a test makes the activity fail so that Temporal retries it and the test can check the retry's outcome,
 * or between two steps of an activity, where a test does something else at that very moment (a hook may await it).
 * Off by default: only a worker built with `faults` (the test harness's `startStackWorkers(stack, { faults })` or
 * `startTestStack({ worker: true, faults })`) has any. No environment variable or config key turns them on, so a
 * production worker never has a fault point.
 */
export type FaultPoint =
  /** mergeBranch: the base branch has been moved, before the result is returned */
  | 'mergeBranch.afterMerge'
  /** prepareWorktree: the worktree exists, before its host is recorded on the attempt */
  | 'prepareWorktree.beforeRecord'
  /** prepareWorktree: the worktree exists, before the setup script runs */
  | 'prepareWorktree.afterWorktree'
  /** prepareWorktree: the setup script runs (its pid in `info`), before its end is awaited */
  | 'prepareWorktree.setupStarted'
  /** runAgent: before the process row is written (a follow-up's: after resumeAttempt made the attempt running again) */
  | 'runAgent.beforeInsert'
  /** runAgent: the process row is written `running` and the run has its slot, before the row's last look and the spawn */
  | 'runAgent.beforeSpawn'
  /** runAgent: the agent runs and its pid is recorded, before its output is watched */
  | 'runAgent.afterSpawn'
  /** runAgent: a retry (or the run of a lost try) has killed what was left in the worktree, before it resets it */
  | 'runAgent.beforeReset'
  /** runAgent with `record` (agent-run-records-outcome): the agent's end is recorded, before the commit and outcome */
  | 'runAgent.afterRun'
  /** pushBranch: before `git push` runs */
  | 'pushBranch.beforePush'
  /** beginRun: the run's workflow definition is read, before its start is written and a first flow's request leaves */
  | 'beginRun.afterDefinition';

/** A hook throws to fail the activity at that point; `info` says what the activity did (e.g. the agent's pid). */
export type Faults = Partial<Record<FaultPoint, (info: Record<string, unknown>) => void | Promise<void>>>;

/** Runs the hook of `point`, if the worker was built with one (tests only). */
export async function faultPoint(faults: Faults | undefined, point: FaultPoint, info: Record<string, unknown> = {}): Promise<void> {
  const hook = faults?.[point];
  if (hook) await hook(info);
}
