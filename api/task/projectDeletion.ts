/**
 * DELETE /api/projects/:id: what goes with a project. First its attempts (cancelled, their worktrees and branches
 * removed on their hosts: removeAttemptsOfProject), then its row (tasks, attempts and data cascade), then its managed
 * clone ($ARMADA_HOME/repos/<id>, never a repository of the user's) by removeProjectCloneWorkflow on a worker: last,
 * because the attempts' worktrees are linked into it. Everything is waited for until one deadline,
 * attempts.deleteWaitMs after the request; what is not done by then is `pending` and done later, and what git
 * refused to remove is `failed` with the reasons (`cleanupErrors`).
 *
 * Crash-safe without bookkeeping: a clone whose project row is gone is an orphan to every worker's janitor
 * (activities/git/cloneJanitor.ts, at the worker's start and every attempts.janitorIntervalMs), so a process that dies
 * between the row delete and the removal, or a removal no worker ran, leaves nothing for good. A clone still being
 * made removes itself once it finds the row gone (cloneProjectWorkflow).
 */
import type { FastifyBaseLogger } from 'fastify';
import { deleteProject, type ProjectRow } from '../../lib/db/projects';
import { hasManagedClone, managedClonePath } from '../../lib/projects/managedClones';
import { isRunning } from '../../lib/temporal/workflowHandles';
import { cloneProjectWorkflowId, removeProjectCloneWorkflowId } from '../../workflows/projectCloneMessages';
import { deleteWithApprovals } from './approvalsOfDeletedAttempts';
import { combinedCleanup, deleteDeadline, removeAttemptsOfProject, type AttemptsCleanup, type AttemptServiceDeps } from './attemptService';

/** Deletes the project and what goes with it; undefined when its row was gone already (deleted meanwhile). */
export async function deleteProjectWithClone(deps: AttemptServiceDeps, project: ProjectRow, log: FastifyBaseLogger): Promise<AttemptsCleanup | undefined> {
  const deadline = deleteDeadline(deps);
  const attempts = await removeAttemptsOfProject(deps, project.id, deadline);
  const managed = hasManagedClone(project, deps.config.home);
  // asked before the row goes: a clone still running then removes what it makes itself, later than this answer
  const cloning = managed && project.clone_status === 'cloning' && (await stillCloning(deps, project.id, log));
  // the rows go with the approvals still pending on their attempts (their workflows cancelled before the commit)
  if (!(await deleteWithApprovals(deps, { projectId: project.id }, (c) => deleteProject(c, project.id)))) return undefined;
  if (!managed) return attempts;
  const removed = await removeClone(deps, { projectId: project.id, dest: managedClonePath(deps.config.home, project.id) }, deadline, log);
  return combinedCleanup([attempts, { cleanup: !cloning && removed ? 'done' : 'pending' }]);
}

/** Whether the project's clone workflow still runs (true when Temporal cannot say: the removal is then not known done). */
async function stillCloning(deps: AttemptServiceDeps, projectId: string, log: FastifyBaseLogger): Promise<boolean> {
  try {
    return await isRunning(await deps.temporal.client(), cloneProjectWorkflowId(projectId));
  } catch (err) {
    log.warn({ projectId, err: { message: (err as Error).message } }, 'cannot tell whether the project is still being cloned');
    return true;
  }
}

/**
 * Runs removeProjectCloneWorkflow and waits for it until the deadline: true when it finished by then. The row is
 * already gone, so a Temporal that cannot be reached fails nothing here: the janitor removes the clone instead.
 */
async function removeClone(deps: AttemptServiceDeps, input: { projectId: string; dest: string }, deadline: number, log: FastifyBaseLogger): Promise<boolean> {
  try {
    const client = await deps.temporal.client();
    const handle = await client.workflow.start('removeProjectCloneWorkflow', {
      workflowId: removeProjectCloneWorkflowId(input.projectId),
      taskQueue: deps.config.temporal.taskQueue,
      args: [input],
      workflowIdConflictPolicy: 'USE_EXISTING',
    });
    return await finishesBy(handle.result(), deadline);
  } catch (err) {
    log.warn({ projectId: input.projectId, err: { message: (err as Error).message } }, "the project's clone is left to the janitor");
    return false;
  }
}

/** Whether `work` succeeds before `deadline` (its later outcome is ignored). */
async function finishesBy(work: Promise<unknown>, deadline: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), Math.max(0, deadline - Date.now()));
  });
  try {
    return await Promise.race([work.then(() => true), late]);
  } finally {
    clearTimeout(timer);
  }
}
