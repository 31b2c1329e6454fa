/** Project routes: /api/projects… */
import path from 'node:path';
import type { FastifyPluginAsync } from 'fastify';
import { Type } from 'typebox';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { Client } from '@temporalio/client';
import { AppError, conflict, notFound, validationError } from '../../lib/errors';
import { redactUrlCredentials, splitUrlCredentials } from '../../lib/urlCredentials';
import { storedRepoUrl } from '../../lib/projects/repoCredentials';
import { newId } from '../../lib/ids';
import { classifyRepoUrl, inspectLocalRepo, REPO_URL_RULE } from '../../lib/git';
import {
  UNIQUE_VIOLATION,
  attemptStats,
  getProject,
  insertProject,
  listProjects,
  lockProjectInsert,
  taskCounts,
  updateProject,
  type ProjectRow,
} from '../../lib/db/projects';
import { withTransaction } from '../../lib/db/pool';
import { withinTemporalBound } from '../../lib/temporal/temporalBound';
import { managedClonePath } from '../../lib/projects/managedClones';
import { CLONE_HEARTBEAT_TIMEOUT_MS, CLONE_RETRY_INITIAL_INTERVAL_MS, cloneProjectWorkflowId } from '../../workflows/projectCloneMessages';
import { deleteProjectWithClone } from './projectDeletion';
import { ok, okPage, pagination } from '../http/envelope';
import { Envelope, ErrorResponses, IdParams, PageQuery, PagedEnvelope } from '../http/schemas';
import type { TaskAppDeps as TaskServiceDeps, TaskPluginOptions } from './deps';
import { serviceDeps } from './attempts';
import { CreateProjectBody, DeletedProject, PatchProjectBody, ProjectDetail, ProjectListItem, ProjectStats } from './projectSchemas';

const iso = (d: Date | null): string | null => (d ? d.toISOString() : null);
/** A project name as stored: trimmed and in Unicode NFC, so a decomposed twin of a name is the same name (409). */
const projectName = (raw: string): string => raw.trim().normalize('NFC');

export function projectListItem(p: ProjectRow) {
  return {
    id: p.id,
    name: p.name,
    description: p.description,
    git_repo_path: p.git_repo_path ?? '',
    setup_script: p.setup_script,
    dev_script: p.dev_script,
    // stored as shown, its credentials sealed apart (lib/projects/repoCredentials.ts); redacted again for older rows
    repository: { url: redactUrlCredentials(p.repo_url), branch: p.repo_branch },
    defaultLLM: p.default_llm,
    createdAt: p.created_at.toISOString(),
    updatedAt: p.updated_at.toISOString(),
  };
}

async function projectDetail(deps: TaskServiceDeps, p: ProjectRow) {
  const [counts, attempts] = await Promise.all([taskCounts(deps.db, p.id), attemptStats(deps.db, p.id)]);
  // built from entries: an agent named __proto__ (a config file may name one so) is a key like any other, where
  // `llms[name] = …` set the prototype
  const llms: Record<string, { model: string }> = Object.fromEntries(
    Object.entries(deps.config.file.agents ?? {}).map(([name, profile]) => [name, { model: profile.model ?? '' }]),
  );
  return {
    id: p.id,
    name: p.name,
    description: p.description,
    repository: {
      url: redactUrlCredentials(p.repo_url),
      branch: p.repo_branch,
      lastSync: iso(p.last_sync),
      status: p.clone_status,
      ...(p.clone_error ? { error: redactUrlCredentials(p.clone_error) } : {}),
    },
    git_repo_path: p.git_repo_path ?? '',
    setup_script: p.setup_script,
    dev_script: p.dev_script,
    defaultLLM: p.default_llm,
    config: { worktrees: { enabled: true, basePath: path.join(deps.config.home, 'worktrees', p.id) }, llms },
    createdAt: p.created_at.toISOString(),
    updatedAt: p.updated_at.toISOString(),
    stats: {
      tasks: counts.total,
      completedTasks: counts.completed,
      inProgressTasks: counts.inProgress,
      failedTasks: counts.failed,
      activeAttempts: attempts.running,
      totalCost: attempts.totalCost,
    },
  };
}

/** Where a new project's repository lives: in place (a local work tree) or cloned by a worker. */
async function resolveRepository(
  url: string,
  gitRepoPath: string | undefined,
): Promise<{ gitRepoPath: string | null; cloneFrom?: string }> {
  if (gitRepoPath !== undefined) {
    const local = await inspectLocalRepo(path.resolve(gitRepoPath));
    if (local.kind !== 'worktree') throw validationError('git_repo_path is not a git work tree', { git_repo_path: 'is not a git work tree' });
  }
  const kind = classifyRepoUrl(url);
  if (kind.kind === 'invalid') {
    // the request schema's pattern (REPO_URL_PATTERN) refuses these first; this keeps the handler from cloning one anyway
    throw validationError(`repository.url ${REPO_URL_RULE}`, { 'repository.url': REPO_URL_RULE });
  }
  if (gitRepoPath !== undefined) return { gitRepoPath: path.resolve(gitRepoPath) };
  if (kind.kind === 'remote') return { gitRepoPath: null, cloneFrom: kind.url };
  const local = await inspectLocalRepo(kind.path);
  if (local.kind === 'worktree') return { gitRepoPath: local.topLevel ?? kind.path };
  if (local.kind === 'bare') return { gitRepoPath: null, cloneFrom: kind.path };
  throw validationError('repository.url is not a git repository', { 'repository.url': 'is not a git repository' });
}

export const projectRoutes: FastifyPluginAsync<TaskPluginOptions> = async (fastify, { deps }) => {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const version = deps.config.version;
  const mustGet = async (id: string): Promise<ProjectRow> => {
    const p = await getProject(deps.db, id);
    if (!p) throw notFound(`Project ${id} not found`, 'PROJECT_NOT_FOUND');
    return p;
  };

  app.get(
    '/projects',
    { schema: { tags: ['projects'], querystring: Type.Object(PageQuery), response: { 200: PagedEnvelope(ProjectListItem), ...ErrorResponses } } },
    async (request) => {
      const { page, limit } = request.query;
      const { rows, total } = await listProjects(deps.db, limit, (page - 1) * limit);
      return okPage(version, rows.map(projectListItem), pagination(page, limit, total));
    },
  );

  app.get(
    '/projects/:id',
    { schema: { tags: ['projects'], params: IdParams, response: { 200: Envelope(ProjectDetail), ...ErrorResponses } } },
    async (request) => ok(version, await projectDetail(deps, await mustGet(request.params.id))),
  );

  app.post(
    '/projects',
    { schema: { tags: ['projects'], body: CreateProjectBody, response: { 201: Envelope(ProjectDetail), ...ErrorResponses } } },
    async (request, reply) => {
      const body = request.body;
      const id = newId();
      const branch = body.repository.branch ?? 'main';
      const repo = await resolveRepository(body.repository.url, body.git_repo_path);
      const dest = managedClonePath(deps.config.home, id);
      const stored = storedRepoUrl(deps.keys.encryption, body.repository.url);
      // The row and the clone workflow's start go in one transaction: a start that fails (or a process that dies
      // before the COMMIT) leaves no row `cloning` with no clone coming. The workflow waits for this transaction's
      // end (the lock) and clones nothing if the row did not commit. The client is had before the transaction
      // (connecting waits with nothing locked), and the start is bounded by config.temporalInTransactionMs: a
      // Temporal that does not answer in time is the 503, not a transaction left open until PostgreSQL ends it.
      const cloneUnavailable = (err: unknown): AppError => {
        request.log.warn({ err: { message: (err as Error).message } }, 'could not start the clone workflow');
        // nothing half-made is left: the row is rolled back (or was never written)
        return new AppError(503, 'SERVICE_UNAVAILABLE', 'Temporal is unavailable: the repository cannot be cloned now; try again');
      };
      let client: Client | undefined;
      if (repo.cloneFrom) {
        try {
          client = await deps.temporal.client();
        } catch (err) {
          throw cloneUnavailable(err);
        }
      }
      const row = await withTransaction(deps.db, async (c) => {
        let inserted: ProjectRow;
        try {
          inserted = await insertProject(c, {
            id,
            name: projectName(body.name),
            description: body.description ?? '',
            repoUrl: stored.repoUrl,
            repoCredentialsSealed: stored.credentialsSealed,
            repoBranch: branch,
            gitRepoPath: repo.gitRepoPath,
            cloneStatus: repo.cloneFrom ? 'cloning' : 'ready',
            setupScript: body.setup_script ?? '',
            devScript: body.dev_script ?? '',
            defaultLlm: body.defaultLLM ?? null,
          });
        } catch (err) {
          if ((err as { code?: string }).code === UNIQUE_VIOLATION) throw conflict(`A project named "${projectName(body.name)}" already exists`, 'PROJECT_EXISTS');
          throw err;
        }
        if (repo.cloneFrom && client) {
          const started = client;
          const cloneFrom = repo.cloneFrom;
          await lockProjectInsert(c, id);
          try {
            await withinTemporalBound(started, deps.config.temporalInTransactionMs, () =>
              started.workflow.start('cloneProjectWorkflow', {
                workflowId: cloneProjectWorkflowId(id),
                taskQueue: deps.config.temporal.taskQueue,
                // the URL without its credentials: the activity opens them from the row (no workflow history holds them)
                args: [
                  {
                    projectId: id,
                    url: splitUrlCredentials(cloneFrom).url,
                    branch,
                    dest,
                    heartbeatTimeoutMs: deps.config.file.projects?.cloneHeartbeatTimeoutMs ?? CLONE_HEARTBEAT_TIMEOUT_MS,
                    retryInitialIntervalMs: deps.config.file.projects?.cloneRetryInitialIntervalMs ?? CLONE_RETRY_INITIAL_INTERVAL_MS,
                  },
                ],
              }),
            );
          } catch (err) {
            throw cloneUnavailable(err);
          }
        }
        return inserted;
      });
      return reply.code(201).send(ok(version, await projectDetail(deps, row)));
    },
  );

  app.patch(
    '/projects/:id',
    { schema: { tags: ['projects'], params: IdParams, body: PatchProjectBody, response: { 200: Envelope(ProjectDetail), ...ErrorResponses } } },
    async (request) => {
      const b = request.body;
      let row: ProjectRow | undefined;
      try {
        row = await updateProject(deps.db, request.params.id, {
          name: b.name === undefined ? undefined : projectName(b.name),
          description: b.description,
          defaultLlm: b.defaultLLM,
          setupScript: b.setup_script,
          devScript: b.dev_script,
        });
      } catch (err) {
        if ((err as { code?: string }).code === UNIQUE_VIOLATION) throw conflict(`A project named "${projectName(b.name ?? '')}" already exists`, 'PROJECT_EXISTS');
        throw err;
      }
      if (!row) throw notFound(`Project ${request.params.id} not found`, 'PROJECT_NOT_FOUND');
      return ok(version, await projectDetail(deps, row));
    },
  );

  app.delete(
    '/projects/:id',
    { schema: { tags: ['projects'], params: IdParams, response: { 200: Envelope(DeletedProject), ...ErrorResponses } } },
    async (request) => {
      // the attempts' worktrees and branches, and the managed clone, go with the project, not at the next janitor run
      const cleanup = await deleteProjectWithClone(serviceDeps(deps), await mustGet(request.params.id), request.log);
      if (!cleanup) throw notFound(`Project ${request.params.id} not found`, 'PROJECT_NOT_FOUND');
      return ok(version, { id: request.params.id, deleted: true as const, deletedAt: new Date().toISOString(), ...cleanup });
    },
  );

  app.get(
    '/projects/:id/stats',
    { schema: { tags: ['projects'], params: IdParams, response: { 200: Envelope(ProjectStats), ...ErrorResponses } } },
    async (request) => {
      const p = await mustGet(request.params.id);
      const [counts, a] = await Promise.all([taskCounts(deps.db, p.id), attemptStats(deps.db, p.id)]);
      const finished = a.successful + a.failed;
      return ok(version, {
        tasks: { total: counts.total, pending: counts.pending, inProgress: counts.inProgress, completed: counts.completed, failed: counts.failed },
        attempts: { total: a.total, successful: a.successful, failed: a.failed },
        costs: { total: a.totalCost, byLLM: a.byLlm },
        performance: {
          averageTaskDuration: a.averageTaskDurationSeconds,
          successRate: finished === 0 ? 0 : a.successful / finished,
          averageCostPerTask: counts.total === 0 ? 0 : a.totalCost / counts.total,
        },
      });
    },
  );
};
