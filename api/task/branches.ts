/** GET /api/projects/:id/branches (managed attempt branches marked) and GET /api/containers/:id (an attempt's worktree). */
import type { FastifyPluginAsync } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { managedBranchPattern } from '../../lib/attempts/branchNames';
import { listBranches } from '../../lib/attempts/gitInfo';
import { readAttemptWorktree } from '../../lib/attempts/hostReads';
import { attemptBranchesOfProject, getAttempt } from '../../lib/db/attempts';
import { getProject } from '../../lib/db/projects';
import { conflict, notFound } from '../../lib/errors';
import { ok } from '../http/envelope';
import { Envelope, ErrorResponses, IdParams } from '../http/schemas';
import { BranchListing, Container } from './attemptSchemas';
import type { TaskPluginOptions } from './deps';

export const branchRoutes: FastifyPluginAsync<TaskPluginOptions> = async (fastify, { deps }) => {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const version = deps.config.version;

  app.get('/projects/:id/branches', { schema: { tags: ['projects'], params: IdParams, response: { 200: Envelope(BranchListing), ...ErrorResponses } } }, async (request) => {
    const project = await getProject(deps.db, request.params.id);
    if (!project) throw notFound(`Project ${request.params.id} not found`, 'PROJECT_NOT_FOUND');
    if (!project.git_repo_path) throw conflict(`Project ${project.id} has no local repository yet (${project.clone_status})`);
    const { current, branches } = await listBranches(project.git_repo_path);
    const known = new Map((await attemptBranchesOfProject(deps.db, project.id)).map((r) => [r.branch, r]));
    const shape = managedBranchPattern(deps.config.branchPrefix);
    const managedBranches: { name: string; taskId: string; attemptId: string | null }[] = [];
    const out = branches.map((b) => {
      const row = known.get(b.name);
      const m = shape.exec(b.name);
      const managed = Boolean(row || m);
      const taskId = row?.task_id ?? m?.[1];
      const attemptId = row?.id;
      if (managed && taskId) managedBranches.push({ name: b.name, taskId, attemptId: attemptId ?? null });
      return {
        name: b.name,
        commit: b.commit,
        isCurrent: b.name === current,
        isDefault: b.name === project.repo_branch,
        isManagedWorktree: managed,
        ...(managed && taskId ? { taskId } : {}),
        ...(attemptId ? { attemptId } : {}),
        lastCommit: b.lastCommit,
      };
    });
    return ok(version, { currentBranch: current, branches: out, managedBranches });
  });

  app.get('/containers/:id', { schema: { tags: ['containers'], params: IdParams, response: { 200: Envelope(Container), ...ErrorResponses } } }, async (request) => {
    // the container of an attempt is its worktree; its id is the attempt id
    const a = await getAttempt(deps.db, request.params.id);
    if (!a) throw notFound(`Container ${request.params.id} not found`);
    const worktreePath = a.cleaned_up ? null : a.worktree_path;
    const read = await readAttemptWorktree(deps, { worktreePath, hostQueue: a.host_queue }, { op: 'status', worktreePath, baseBranch: a.base_branch, baseCommit: a.base_commit });
    if (read.op !== 'status') throw new Error('unexpected worktree read');
    const s = read.status;
    // a removed worktree (cleanup after a merge, a delete, or gone from disk) is reported as deleted, without its path
    const removed = a.cleaned_up || (a.worktree_path !== null && !s.exists);
    const status = removed ? 'deleted' : a.merged_at ? 'merged' : a.status === 'running' ? 'active' : 'inactive';
    return ok(version, {
      id: a.id,
      taskAttemptId: a.id,
      worktreePath: removed ? null : a.worktree_path,
      branch: a.branch,
      baseBranch: a.base_branch,
      status,
      createdAt: a.created_at.toISOString(),
      diskUsage: s.diskUsage,
      gitStatus: s.gitStatus,
      files: s.files,
    });
  });
};
