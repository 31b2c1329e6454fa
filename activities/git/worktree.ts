/** Worktree activities of an attempt: prepare (worktree + branch + setup script), commit the agent's changes (removal: removeWorktree.ts). */
import fs from 'node:fs';
import path from 'node:path';
import { ApplicationFailure, Context } from '@temporalio/activity';
import { TemporalFailure } from '@temporalio/common';
import type { ArmadaConfig } from '../../lib/config';
import { getAttemptWorktreeContext, setAttemptChanges, setAttemptWorktree, type AttemptChanges } from '../../lib/db/attempts';
import type { Pool } from 'pg';
import { appendLogs } from '../../lib/db/processes';
import { isPostgresUnavailable } from '../../lib/db/pool';
import { diskFullCause } from '../../lib/fs/diskFull';
import { git, gitOrThrow, inspectLocalRepo } from '../../lib/git';
import { childEnv } from '../../lib/process/childEnv';
import { faultPoint, type Faults } from '../../lib/faults';
import { killProcessesUnder, launchGroupProcess } from '../../lib/process/processGroup';
import { hostQueue } from '../../lib/temporal/queues';
import { keepAlive } from '../keepAlive';
import { untilPostgresAnswers } from '../untilPostgresAnswers';
import { withRepoLock } from './repoLock';
import { removeWorktree } from './removeWorktree';
import { commitWorktree } from './commitWorktree';
import { addWorktreeFast, readBranchCommits } from './fastWorktree';
import { groupNice } from '../../lib/process/priority';

export interface PreparedWorktree {
  worktreePath: string;
  branch: string;
  baseBranch: string;
  baseCommit: string;
  hostQueue: string;
  repoPath: string;
}

/**
 * `git worktree add -b <branch> <path> <base commit>` under $ARMADA_HOME/worktrees, then the project's setup_script.
 * One git process on the common path: the base and attempt branches are read from the ref files, and a new branch's
 * worktree is made by activities/git/fastWorktree.ts with one `git read-tree`; other repositories take
 * `for-each-ref` and `worktree add` (a `worktree prune` only when the add fails on a stale registration).
 * Idempotent: a worktree left by an earlier try of this activity is reused, and the setup script runs until one try
 * has seen it succeed (a marker in the worktree's git directory), so a retry after the worktree was made, or while
 * the setup script ran, runs it again to completion. Setup scripts must therefore be safe to run more than once.
 */
export async function prepareWorktree(deps: { db: Pool; config: ArmadaConfig; faults?: Faults }, input: { attemptId: string; processId: string }): Promise<PreparedWorktree> {
  const seen: { repo?: string } = {};
  try {
    return await prepareWorktreeOnce(deps, input, (repo) => (seen.repo = repo));
  } catch (err) {
    // the worktrees' disk, and the repository's (the branch and the worktree's index are written there)
    throw withDiskFullCause(err, [path.join(deps.config.home, 'worktrees'), ...(seen.repo ? [seen.repo] : [])], 'start a new attempt');
  }
}

/**
 * A failure of a git or file write of an attempt's worktree that a full disk caused, said so first (git's own words
 * rarely say it: `unable to write file README.md`), with what to do; any other error as it is. The failure stays
 * retryable: space freed before the last try lets that try succeed.
 */
export function withDiskFullCause(err: unknown, paths: string[], then: string): unknown {
  // Temporal's own failures (a non-retryable one, a cancellation) and PostgreSQL's outage keep their kind
  if (err instanceof TemporalFailure || isPostgresUnavailable(err) || !(err instanceof Error)) return err;
  const cause = diskFullCause(err, paths);
  if (!cause) return err;
  return new Error(`${cause}: free space on it, then ${then} (${err.message})`);
}

async function prepareWorktreeOnce(
  deps: { db: Pool; config: ArmadaConfig; faults?: Faults },
  input: { attemptId: string; processId: string },
  repoFound: (repo: string) => void,
): Promise<PreparedWorktree> {
  const ctx = await worktreeContextOnceCloned(deps, input);
  const { attempt, project } = ctx;
  const repo = project.git_repo_path;
  if (!repo) throw ApplicationFailure.nonRetryable(`project ${project.id} has no local repository (${project.clone_error ?? 'clone failed'})`, 'NoRepository');
  repoFound(repo);
  const branch = attempt.branch as string;
  let baseBranch = attempt.base_branch ?? project.repo_branch;
  // the ref files when they can be read directly (no git process), else `git for-each-ref`
  const refs =
    readBranchCommits(repo, [baseBranch, branch]) ??
    (await branchCommits(repo, [baseBranch, branch]).catch(async (err) => {
      throw (await unusableRepository(repo)) ?? err;
    }));
  let baseHead = refs.get(baseBranch);
  if (!baseHead) ({ baseBranch, baseHead } = await currentBranchAsBase(repo, baseBranch));
  const worktreePath = path.join(deps.config.home, 'worktrees', attempt.id);
  fs.mkdirSync(path.dirname(worktreePath), { recursive: true });
  let baseCommit = attempt.base_commit;
  const existing = fs.existsSync(path.join(worktreePath, '.git'));
  if (!existing) {
    // a new branch starts at the base commit just read, so baseCommit is exactly where it forked
    const add = refs.has(branch) ? ['worktree', 'add', worktreePath, branch] : ['worktree', 'add', '-b', branch, worktreePath, baseHead];
    await withRepoLock(repo, async () => {
      fs.rmSync(worktreePath, { recursive: true, force: true });
      // a new branch in a plain repository: one git process (activities/git/fastWorktree.ts), else `git worktree add`
      if (!refs.has(branch) && (await addWorktreeFast(repo, worktreePath, branch, baseHead as string))) return;
      if ((await git(repo, add)).code === 0) return;
      // a worktree of an earlier try removed from disk but still registered: prune it and add again
      await git(repo, ['worktree', 'prune']);
      fs.rmSync(worktreePath, { recursive: true, force: true });
      const branchNow = (await git(repo, ['rev-parse', '--verify', '--quiet', `refs/heads/${branch}`])).code === 0;
      await gitOrThrow(repo, branchNow ? ['worktree', 'add', worktreePath, branch] : ['worktree', 'add', '-b', branch, worktreePath, baseHead as string]);
    });
    if (!baseCommit) baseCommit = refs.has(branch) ? (await gitOrThrow(repo, ['merge-base', branch, baseBranch])).trim() : baseHead;
  } else if (!baseCommit) {
    baseCommit = (await gitOrThrow(repo, ['merge-base', branch, baseBranch])).trim();
  }
  const prepared = { worktreePath, branch, baseBranch, baseCommit: baseCommit as string, hostQueue: hostQueue(deps.config.temporal.taskQueue), repoPath: repo };
  await faultPoint(deps.faults, 'prepareWorktree.beforeRecord', { worktreePath, branch });
  if (!(await setAttemptWorktree(deps.db, attempt.id, prepared))) {
    // cancelled or deleted while the worktree was made (a delete racing the start): nobody else knows it is here
    const removal = await removeWorktree(deps, { attemptId: null, repoPath: repo, worktreePath, branch, deleteBranch: !refs.has(branch) });
    const what = removal.removed ? 'the worktree was removed' : `its worktree was not removed: ${removal.error?.message}`;
    throw ApplicationFailure.nonRetryable(`attempt ${attempt.id} was cancelled or deleted while its worktree was made; ${what}`, 'AttemptGone');
  }
  await faultPoint(deps.faults, 'prepareWorktree.afterWorktree', { worktreePath });
  if (project.setup_script.trim()) await runSetupOnce(deps, { attemptId: attempt.id, taskId: attempt.task_id, processId: input.processId, worktreePath, script: project.setup_script });
  return prepared;
}

/**
 * Why the project's repository cannot be used at all, as a failure not to retry (the same on every try), or undefined
 * when it can: the path is gone from this worker's host, or it is no longer a git repository.
 */
async function unusableRepository(repo: string): Promise<ApplicationFailure | undefined> {
  if (!fs.existsSync(repo)) {
    return ApplicationFailure.nonRetryable(
      `the project's repository ${repo} does not exist on this worker's host: restore it there (or create a project on another checkout), then start a new attempt`,
      'NoRepository',
    );
  }
  if ((await inspectLocalRepo(repo)).kind === 'none') {
    return ApplicationFailure.nonRetryable(
      `the project's repository ${repo} is no longer a git repository: restore its .git (or create a project on another checkout), then start a new attempt`,
      'NoRepository',
    );
  }
  return undefined;
}

/**
 * The base when the configured branch does not exist locally: the repository's current branch. A repository with no
 * commit yet (a fresh `git init`) or a detached HEAD has none to fork from; that fails the attempt at once with what
 * to do, not after five tries of a git error.
 */
async function currentBranchAsBase(repo: string, configured: string): Promise<{ baseBranch: string; baseHead: string }> {
  const head = await git(repo, ['symbolic-ref', '--quiet', '--short', 'HEAD']);
  if (head.code !== 0) {
    throw ApplicationFailure.nonRetryable(
      `branch "${configured}" does not exist in ${repo} and its HEAD is detached, so there is no branch to start from: create the branch (git -C ${repo} branch ${configured}) or check one out, then start a new attempt`,
      'NoBaseBranch',
    );
  }
  const baseBranch = head.stdout.trim();
  const commit = await git(repo, ['rev-parse', '--verify', '--quiet', `refs/heads/${baseBranch}^{commit}`]);
  if (commit.code !== 0) {
    throw ApplicationFailure.nonRetryable(
      `${repo} has no commit yet (its branch "${baseBranch}" is empty), and an attempt's branch forks from one: make a first commit (for example git -C ${repo} commit --allow-empty -m "initial commit"), then start a new attempt`,
      'EmptyRepository',
    );
  }
  return { baseBranch, baseHead: commit.stdout.trim() };
}

const CLONE_POLL_MS = 250;

/**
 * The attempt's worktree context once its project's repository is cloned. An attempt started while the clone still
 * runs waits for it here (heartbeating, one single-row read per CLONE_POLL_MS, a line in the attempt's log) and starts
 * as soon as the clone is done. (It used to fail the activity and wait for Temporal's retry backoff, 1 + 2 + 4 + 8 s:
 * up to twice the clone's time, and a failed attempt when the clone took longer than the five tries.)
 */
async function worktreeContextOnceCloned(deps: { db: Pool }, input: { attemptId: string; processId: string }) {
  const gone = () => ApplicationFailure.nonRetryable(`attempt ${input.attemptId} no longer exists`, 'AttemptGone');
  let ctx = await getAttemptWorktreeContext(deps.db, input.attemptId);
  if (!ctx) throw gone();
  if (ctx.project.git_repo_path || ctx.project.clone_status !== 'cloning') return ctx;
  await appendLogs(deps.db, input.processId, input.attemptId, [
    { level: 'info', message: "waiting for the project's repository to finish cloning", timestamp: new Date().toISOString(), source: 'armada' },
  ]);
  const activity = Context.current();
  const started = Date.now();
  return keepAlive(
    async () => {
      for (;;) {
        await activity.sleep(CLONE_POLL_MS); // rejects when the attempt is cancelled
        ctx = await getAttemptWorktreeContext(deps.db, input.attemptId);
        if (!ctx) throw gone();
        if (ctx.project.git_repo_path || ctx.project.clone_status !== 'cloning') return ctx;
      }
    },
    { details: () => ({ stage: 'cloning', waitedMs: Date.now() - started }) },
  );
}

/** The commit of refs/heads/<name> for each of `names` that exists, in one `git for-each-ref`. */
async function branchCommits(repo: string, names: string[]): Promise<Map<string, string>> {
  const out = await gitOrThrow(repo, ['for-each-ref', '--format=%(objectname) %(refname)', ...names.map((n) => `refs/heads/${n}`)]);
  const byRef = new Map<string, string>();
  for (const l of out.split('\n')) {
    const i = l.indexOf(' ');
    if (i > 0) byRef.set(l.slice(i + 1), l.slice(0, i));
  }
  // for-each-ref also matches refs below a pattern (refs/heads/main/x): only exact names count
  const found = new Map<string, string>();
  for (const n of names) {
    const c = byRef.get(`refs/heads/${n}`);
    if (c) found.set(n, c);
  }
  return found;
}

/** Written in the worktree's git directory (never part of its tree) once the setup script succeeded there. */
const SETUP_DONE_MARKER = 'armada-setup-done';

/** Runs the setup script in the worktree unless a try of this activity already saw it succeed there. */
async function runSetupOnce(deps: { db: Pool; config: ArmadaConfig; faults?: Faults }, s: { attemptId: string; taskId: string; processId: string; worktreePath: string; script: string }): Promise<void> {
  const gitDir = (await gitOrThrow(s.worktreePath, ['rev-parse', '--absolute-git-dir'])).trim();
  const marker = path.join(gitDir, SETUP_DONE_MARKER);
  if (fs.existsSync(marker)) return;
  const pending: Parameters<typeof appendLogs>[3] = [];
  const log = (level: 'info' | 'warn' | 'error', message: string) => pending.push({ level, message, timestamp: new Date().toISOString(), source: 'setup' });
  // a setup script of a lost earlier try may still run here: it is stopped before the script starts again. Only its
  // processes (started with this setup's ARMADA_SETUP_ID, which their children inherit): a user's shell or editor in
  // the worktree stays
  const orphans = killProcessesUnder(s.worktreePath, { startedWith: { name: 'ARMADA_SETUP_ID', value: s.processId } });
  if (orphans.length) log('warn', `stopped ${orphans.length} process(es) of an earlier setup run`);
  let n = 0;
  const proc = await launchGroupProcess({
    command: 'bash',
    args: ['-c', s.script],
    cwd: s.worktreePath,
    env: childEnv({ vars: { ARMADA_WORKTREE: s.worktreePath, ARMADA_ATTEMPT_ID: s.attemptId, ARMADA_TASK_ID: s.taskId, ARMADA_SETUP_ID: s.processId } }),
    nice: groupNice(deps.config),
    onLine: (stream, line) => {
      n++;
      log(stream === 'stdout' ? 'info' : 'warn', line);
    },
    timeoutMs: 30 * 60_000,
    leftovers: 'keep', // a service it starts in the background (`server &`) is there for the agent; removing the worktree ends it
  });
  await faultPoint(deps.faults, 'prepareWorktree.setupStarted', { worktreePath: s.worktreePath, pid: proc.pid });
  const r = await keepAlive(() => proc.done, { intervalMs: 1000, details: () => ({ stage: 'setup', lines: n }) });
  const ok = r.code === 0;
  log(ok ? 'info' : 'error', `setup script exited with code ${r.code ?? r.signal}`);
  // the script has run: its lines wait for PostgreSQL here, or a failed try would run it again
  await untilPostgresAnswers(() => appendLogs(deps.db, s.processId, s.attemptId, pending));
  if (!ok) throw ApplicationFailure.nonRetryable(`setup script failed with exit code ${r.code ?? r.signal}`, 'SetupFailed');
  fs.writeFileSync(marker, `${new Date().toISOString()}\n`);
}

/** Commits everything in the worktree on the attempt branch (nothing to commit is fine) and records the stats. */
export async function commitChanges(
  deps: { db: Pool },
  input: { attemptId: string; worktreePath: string; baseCommit: string; message: string; repoPath?: string },
): Promise<AttemptChanges> {
  const stats = await commitWorktree(input);
  await setAttemptChanges(deps.db, input.attemptId, stats);
  return stats;
}
