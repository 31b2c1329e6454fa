/** Worktree activities of an attempt: prepare (worktree + branch + setup script), commit the agent's changes, remove. */
import fs from 'node:fs';
import path from 'node:path';
import { ApplicationFailure } from '@temporalio/activity';
import type { ArmadaConfig } from '../../lib/config';
import { getAttempt, setAttemptChanges, setAttemptCleanedUp, setAttemptWorktree, type AttemptChanges } from '../../lib/db/attempts';
import type { Pool } from 'pg';
import { getProject } from '../../lib/db/projects';
import { appendLogs } from '../../lib/db/processes';
import { getTask } from '../../lib/db/tasks';
import { git, gitOrThrow } from '../../lib/git';
import { childEnv } from '../../lib/process/childEnv';
import { faultPoint, type Faults } from '../../lib/faults';
import { killProcessesUnder, startGroupProcess } from '../../lib/process/processGroup';
import { hostQueue } from '../../lib/temporal/queues';
import { keepAlive } from '../keepAlive';
import { removeMergeMarkers } from './mergeMarkers';

export interface PreparedWorktree {
  worktreePath: string;
  branch: string;
  baseBranch: string;
  baseCommit: string;
  hostQueue: string;
  repoPath: string;
}

const repoLocks = new Map<string, Promise<unknown>>();

/**
 * Serialises worktree add/remove per repository within this worker (git takes repository-wide locks for them) and
 * retries briefly when another process holds a git lock.
 */
export async function withRepoLock<T>(repo: string, fn: () => Promise<T>): Promise<T> {
  const prev = repoLocks.get(repo) ?? Promise.resolve();
  const run = prev.catch(() => undefined).then(async () => {
    for (let i = 0; ; i++) {
      try {
        return await fn();
      } catch (err) {
        if (i >= 10 || !/\.lock|locked/i.test((err as Error).message)) throw err;
        await new Promise((r) => setTimeout(r, 100 * (i + 1)));
      }
    }
  });
  repoLocks.set(repo, run);
  try {
    return await run;
  } finally {
    if (repoLocks.get(repo) === run) repoLocks.delete(repo);
  }
}

/** Identity for commits made by Armada when the repository has none configured. */
export const COMMIT_IDENTITY = ['-c', 'user.name=Armada', '-c', 'user.email=armada@localhost'];

async function identityArgs(cwd: string): Promise<string[]> {
  const r = await git(cwd, ['config', 'user.email']);
  return r.code === 0 && r.stdout.trim() ? [] : COMMIT_IDENTITY;
}

export async function loadAttemptContext(db: Pool, attemptId: string) {
  const attempt = await getAttempt(db, attemptId);
  if (!attempt) throw ApplicationFailure.nonRetryable(`attempt ${attemptId} no longer exists`, 'AttemptGone');
  const task = await getTask(db, attempt.task_id);
  if (!task) throw ApplicationFailure.nonRetryable(`task ${attempt.task_id} no longer exists`, 'AttemptGone');
  const project = await getProject(db, task.project_id);
  if (!project) throw ApplicationFailure.nonRetryable(`project ${task.project_id} no longer exists`, 'AttemptGone');
  return { attempt, task, project };
}

/**
 * `git worktree add -b <branch> <path> <base>` under $ARMADA_HOME/worktrees, then the project's setup_script.
 * Idempotent: a worktree left by an earlier try of this activity is reused, and the setup script runs until one try
 * has seen it succeed (a marker in the worktree's git directory), so a retry after the worktree was made, or while
 * the setup script ran, runs it again to completion. Setup scripts must therefore be safe to run more than once.
 */
export async function prepareWorktree(deps: { db: Pool; config: ArmadaConfig; faults?: Faults }, input: { attemptId: string; processId: string }): Promise<PreparedWorktree> {
  const { attempt, project } = await loadAttemptContext(deps.db, input.attemptId);
  const repo = project.git_repo_path;
  if (!repo) {
    if (project.clone_status === 'cloning') throw new Error(`project ${project.id} is still being cloned`);
    throw ApplicationFailure.nonRetryable(`project ${project.id} has no local repository (${project.clone_error ?? 'clone failed'})`, 'NoRepository');
  }
  const branch = attempt.branch as string;
  let baseBranch = attempt.base_branch ?? project.repo_branch;
  if ((await git(repo, ['rev-parse', '--verify', '--quiet', `refs/heads/${baseBranch}^{commit}`])).code !== 0) {
    // the configured branch does not exist locally: use the repository's current branch
    baseBranch = (await gitOrThrow(repo, ['symbolic-ref', '--short', 'HEAD'])).trim();
  }
  const worktreePath = path.join(deps.config.home, 'worktrees', attempt.id);
  fs.mkdirSync(path.dirname(worktreePath), { recursive: true });
  let baseCommit = attempt.base_commit;
  const existing = fs.existsSync(path.join(worktreePath, '.git'));
  if (!existing) {
    await withRepoLock(repo, async () => {
      await git(repo, ['worktree', 'prune']);
      fs.rmSync(worktreePath, { recursive: true, force: true });
      const branchExists = (await git(repo, ['rev-parse', '--verify', '--quiet', `refs/heads/${branch}`])).code === 0;
      if (branchExists) await gitOrThrow(repo, ['worktree', 'add', worktreePath, branch]);
      else await gitOrThrow(repo, ['worktree', 'add', '-b', branch, worktreePath, baseBranch]);
    });
    if (!baseCommit) baseCommit = (await gitOrThrow(repo, ['rev-parse', `refs/heads/${baseBranch}`])).trim();
  } else if (!baseCommit) {
    baseCommit = (await gitOrThrow(repo, ['merge-base', branch, baseBranch])).trim();
  }
  const prepared = { worktreePath, branch, baseBranch, baseCommit: baseCommit as string, hostQueue: hostQueue(deps.config.temporal.taskQueue), repoPath: repo };
  await setAttemptWorktree(deps.db, attempt.id, prepared);
  await faultPoint(deps.faults, 'prepareWorktree.afterWorktree', { worktreePath });
  if (project.setup_script.trim()) await runSetupOnce(deps, { attemptId: attempt.id, taskId: attempt.task_id, processId: input.processId, worktreePath, script: project.setup_script });
  return prepared;
}

/** Written in the worktree's git directory (never part of its tree) once the setup script succeeded there. */
const SETUP_DONE_MARKER = 'armada-setup-done';

/** Runs the setup script in the worktree unless a try of this activity already saw it succeed there. */
async function runSetupOnce(deps: { db: Pool }, s: { attemptId: string; taskId: string; processId: string; worktreePath: string; script: string }): Promise<void> {
  const gitDir = (await gitOrThrow(s.worktreePath, ['rev-parse', '--absolute-git-dir'])).trim();
  const marker = path.join(gitDir, SETUP_DONE_MARKER);
  if (fs.existsSync(marker)) return;
  const pending: Parameters<typeof appendLogs>[3] = [];
  const log = (level: 'info' | 'warn' | 'error', message: string) => pending.push({ level, message, timestamp: new Date().toISOString(), source: 'setup' });
  // a setup script of a lost earlier try may still run here: it is stopped before the script starts again
  const orphans = killProcessesUnder(s.worktreePath);
  if (orphans.length) log('warn', `stopped ${orphans.length} process(es) of an earlier setup run`);
  let n = 0;
  const proc = startGroupProcess({
    command: 'bash',
    args: ['-c', s.script],
    cwd: s.worktreePath,
    env: childEnv({ vars: { ARMADA_WORKTREE: s.worktreePath, ARMADA_ATTEMPT_ID: s.attemptId, ARMADA_TASK_ID: s.taskId } }),
    onLine: (stream, line) => {
      n++;
      log(stream === 'stdout' ? 'info' : 'warn', line);
    },
    timeoutMs: 30 * 60_000,
  });
  const r = await keepAlive(() => proc.done, { intervalMs: 1000, details: () => ({ stage: 'setup', lines: n }) });
  const ok = r.code === 0;
  log(ok ? 'info' : 'error', `setup script exited with code ${r.code ?? r.signal}`);
  await appendLogs(deps.db, s.processId, s.attemptId, pending);
  if (!ok) throw ApplicationFailure.nonRetryable(`setup script failed with exit code ${r.code ?? r.signal}`, 'SetupFailed');
  fs.writeFileSync(marker, `${new Date().toISOString()}\n`);
}

/** Change statistics of base..HEAD in the worktree. */
export async function changeStats(cwd: string, baseCommit: string): Promise<AttemptChanges> {
  const numstat = await gitOrThrow(cwd, ['diff', '--numstat', '-M', baseCommit, 'HEAD']);
  const nameStatus = await gitOrThrow(cwd, ['diff', '--name-status', '-M', baseCommit, 'HEAD']);
  let linesAdded = 0;
  let linesRemoved = 0;
  for (const l of numstat.split('\n').filter(Boolean)) {
    const [a, d] = l.split('\t');
    linesAdded += Number(a) || 0;
    linesRemoved += Number(d) || 0;
  }
  const c: AttemptChanges = { filesChanged: 0, filesCreated: 0, filesModified: 0, filesDeleted: 0, linesAdded, linesRemoved, files: [] };
  for (const l of nameStatus.split('\n').filter(Boolean)) {
    const [st, ...paths] = l.split('\t');
    c.filesChanged++;
    c.files.push(paths[paths.length - 1] as string);
    if (st?.startsWith('A')) c.filesCreated++;
    else if (st?.startsWith('D')) c.filesDeleted++;
    else c.filesModified++;
  }
  return c;
}

/** Commits everything in the worktree on the attempt branch (nothing to commit is fine) and records the stats. */
export async function commitChanges(
  deps: { db: Pool },
  input: { attemptId: string; worktreePath: string; baseCommit: string; message: string },
): Promise<AttemptChanges & { commit: string }> {
  const cwd = input.worktreePath;
  await gitOrThrow(cwd, ['add', '-A']);
  const staged = await git(cwd, ['diff', '--cached', '--quiet']);
  if (staged.code === 1) await gitOrThrow(cwd, [...(await identityArgs(cwd)), 'commit', '-q', '--no-verify', '-m', input.message]);
  const commit = (await gitOrThrow(cwd, ['rev-parse', 'HEAD'])).trim();
  const stats = await changeStats(cwd, input.baseCommit);
  await setAttemptChanges(deps.db, input.attemptId, stats);
  return { ...stats, commit };
}

/** Removes the worktree and (optionally) the branch. Idempotent. */
export async function removeWorktree(deps: { db: Pool }, input: { attemptId: string | null; repoPath: string; worktreePath: string | null; branch: string | null; deleteBranch: boolean }): Promise<void> {
  await withRepoLock(input.repoPath, async () => {
    if (input.worktreePath) {
      await git(input.repoPath, ['worktree', 'remove', '--force', input.worktreePath]);
      fs.rmSync(input.worktreePath, { recursive: true, force: true });
    }
    await git(input.repoPath, ['worktree', 'prune']);
    if (input.deleteBranch && input.branch) await git(input.repoPath, ['branch', '-D', input.branch]);
    if (input.deleteBranch && input.attemptId) await removeMergeMarkers(input.repoPath, input.attemptId);
  });
  if (input.attemptId) await setAttemptCleanedUp(deps.db, input.attemptId);
}
