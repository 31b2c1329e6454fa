/** Task routes: /api/tasks…, /api/projects/:id/tasks, bulk update and delete. */
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type, type Static } from 'typebox';
import { notFound } from '../../lib/errors';
import { newId } from '../../lib/ids';
import { redactUrlCredentials } from '../../lib/urlCredentials';
import { getProject } from '../../lib/db/projects';
import { FOREIGN_KEY_VIOLATION, withTransaction } from '../../lib/db/pool';
import { attemptDurationSeconds, type AttemptSummaryRow } from '../../lib/db/attempts';
import {
  deleteTasks,
  getTask,
  getTaskDetail,
  insertTask,
  listTasksJson,
  updateTasks,
  type TaskFilter,
  type TaskPatch,
  type TaskDetailRows,
  type TaskRow,
} from '../../lib/db/tasks';
import { publishTaskCreated, publishTaskDeleted, publishTaskStatusChanged, publishTaskUpdated } from '../../lib/events/taskEvents';
import { createInvalidatingCache } from '../../lib/events/invalidatingCache';
import { counter } from '../../lib/metrics';
import type { Queryable } from '../../lib/db/pool';
import { removeAttemptsOfTasks } from './attemptService';
import { deleteWithApprovals } from './approvalsOfDeletedAttempts';
import { actingUser } from '../http/actingUser';
import { ok, pagination, rawPage } from '../http/envelope';
import { Envelope, ErrorResponses, IdParams, PagedEnvelope } from '../http/schemas';
import { serviceDeps } from './attempts';
import type { TaskAppDeps as TaskServiceDeps, TaskPluginOptions } from './deps';
import {
  BulkDeleteBody,
  BulkResult,
  BulkUpdateBody,
  CreateTaskBody,
  DeletedTask,
  PatchTaskBody,
  Task,
  TaskDetail,
  TaskListQuery,
} from './taskSchemas';

const iso = (d: Date | null): string | null => (d ? d.toISOString() : null);

export function taskView(t: TaskRow) {
  return {
    id: t.id,
    projectId: t.project_id,
    title: t.title,
    description: t.description,
    status: t.status,
    priority: t.priority,
    labels: t.labels,
    assignee: t.assignee,
    createdBy: t.created_by,
    createdAt: t.created_at.toISOString(),
    updatedAt: t.updated_at.toISOString(),
    completedAt: iso(t.completed_at),
    metadata: t.metadata,
  };
}

export function attemptSummary(a: AttemptSummaryRow) {
  return {
    id: a.id,
    number: a.number,
    llm: a.llm,
    status: a.status,
    branch: a.branch,
    startedAt: iso(a.started_at),
    completedAt: iso(a.completed_at),
    duration: attemptDurationSeconds(a),
    cost: a.total_cost,
    filesChanged: a.files_changed,
    linesAdded: a.lines_added,
    linesRemoved: a.lines_removed,
  };
}

/** What the detail view is built from, in one round trip (lib/db/tasks.ts getTaskDetail); null for an unknown task. */
async function loadTaskDetail(deps: TaskServiceDeps, id: string): Promise<TaskDetailRows | null> {
  return (await getTaskDetail(deps.db, id)) ?? null;
}

/** The detail view, built per request (a running attempt's duration runs up to now). The rows are never modified. */
function taskDetail({ t, attempts }: TaskDetailRows) {
  const project = { repo_url: t.project_repo_url, repo_branch: t.project_repo_branch };
  const latest = attempts[attempts.length - 1];
  const summaries = attempts.map(attemptSummary);
  return {
    ...taskView(t),
    metadata: {
      ...t.metadata,
      repository: project?.repo_url ? redactUrlCredentials(project.repo_url) : null,
      branch: latest?.branch ?? project?.repo_branch ?? null,
      worktreePath: latest?.worktree_path ?? null,
    },
    attempts: summaries,
    stats: {
      totalAttempts: attempts.length,
      successfulAttempts: attempts.filter((a) => a.status === 'completed').length,
      failedAttempts: attempts.filter((a) => a.status === 'failed').length,
      totalCost: attempts.reduce((s, a) => s + a.total_cost, 0),
      totalDuration: summaries.reduce((s, a) => s + (a.duration ?? 0), 0),
    },
  };
}

/** Sent by lib/db/migrations/061_task_change_notify.sql on every committed change to tasks. */
const TASKS_CHANGED_CHANNEL = 'armada_tasks_changed';
/** Sent by lib/db/migrations/062_task_detail_notify.sql on every committed change to attempts or projects. */
const TASK_DETAILS_CHANGED_CHANNEL = 'armada_task_details_changed';

/** `Cache-Control: no-cache` (or `no-store`, or `Pragma: no-cache`): the client asks for a page read from the database. */
function noCache(request: FastifyRequest): boolean {
  const cc = request.headers['cache-control'];
  return (typeof cc === 'string' && /\bno-(cache|store)\b/i.test(cc)) || request.headers.pragma === 'no-cache';
}

function parseLabels(labels: string | undefined): string[] | undefined {
  if (labels === undefined) return undefined;
  const list = labels.split(',').map((l) => l.trim()).filter(Boolean);
  return list.length ? list : undefined;
}

/** Labels as stored: trimmed (as the `labels` filter reads them) and each once, in the given order. */
const storedLabels = (labels: string[]): string[] => [...new Set(labels.map((l) => l.trim()))];

/** Applies a client's patch (trimmed title and assignee, trimmed and de-duplicated labels) and publishes the status changes it caused. */
async function patchTasks(c: Queryable, ids: string[], patch: TaskPatch) {
  const rows = await updateTasks(c, ids, {
    ...patch,
    title: patch.title?.trim(),
    labels: patch.labels ? storedLabels(patch.labels) : undefined,
    assignee: typeof patch.assignee === 'string' ? patch.assignee.trim() : patch.assignee,
  });
  const fields = Object.entries(patch).flatMap(([k, v]) => (v === undefined ? [] : [k]));
  for (const r of rows) {
    await publishTaskStatusChanged(c, r, r.previous_status);
    // a PATCH that only repeats the current status changes nothing: no event at all
    if (fields.some((f) => f !== 'status') || r.status !== r.previous_status) await publishTaskUpdated(c, r, fields);
  }
  return rows;
}

export const taskRoutes: FastifyPluginAsync<TaskPluginOptions> = async (fastify, { deps }) => {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const version = deps.config.version;

  const cacheConfig = deps.config.file.taskReadCache;
  const cacheOutcomes = counter(deps.metrics.registry, 'armada_task_read_cache_total', 'Task lists and details answered, by cache and outcome (hit, miss, bypass)', [
    'cache',
    'outcome',
  ]);
  const maxEntries = cacheConfig?.maxEntries ?? 1000;
  const listCache =
    cacheConfig?.enabled === false
      ? undefined
      : createInvalidatingCache<{ json: string; total: number }>({
          listener: deps.events,
          channels: [TASKS_CHANGED_CHANNEL],
          maxEntries,
          onOutcome: (outcome) => cacheOutcomes.inc({ cache: 'list', outcome }),
        });
  const detailCache =
    cacheConfig?.enabled === false
      ? undefined
      : createInvalidatingCache<TaskDetailRows | null>({
          listener: deps.events,
          channels: [TASKS_CHANGED_CHANNEL, TASK_DETAILS_CHANGED_CHANNEL],
          maxEntries,
          keep: (rows) => rows !== null,
          onOutcome: (outcome) => cacheOutcomes.inc({ cache: 'detail', outcome }),
        });

  const list = async (request: FastifyRequest, reply: FastifyReply, query: Static<typeof TaskListQuery>, projectId?: string) => {
    const filter: TaskFilter = {
      projectId: projectId ?? query.projectId,
      status: query.status,
      priority: query.priority,
      labels: parseLabels(query.labels),
      assignee: query.assignee?.trim(),
      search: query.search,
    };
    const page = { limit: query.limit, offset: (query.page - 1) * query.limit, sort: query.sort };
    const load = () => listTasksJson(deps.db, filter, page);
    const { value, outcome } =
      listCache && !noCache(request) ? await listCache.read(JSON.stringify([filter, page]), load) : { value: await load(), outcome: 'bypass' as const };
    reply.header('x-armada-cache', outcome);
    return rawPage(version, value.json, pagination(query.page, query.limit, value.total));
  };
  /** The page's items arrive serialised by PostgreSQL; the envelope is wrapped around them as text. */
  const sendPage = (reply: FastifyReply, body: string) => reply.type('application/json; charset=utf-8').send(body);

  const cacheNote =
    'never older than a change committed before the request (docs/task-service.md#read-cache). ' +
    'The X-Armada-Cache response header says hit, miss or bypass; send Cache-Control: no-cache to read from the database.';
  const listDescription = `Pages come from the read cache of the API process, ${cacheNote}`;
  const detailDescription = `The task, its attempts and stats come from the read cache of the API process, ${cacheNote}`;
  app.get(
    '/tasks',
    { schema: { tags: ['tasks'], description: listDescription, querystring: TaskListQuery, response: { 200: PagedEnvelope(Task), ...ErrorResponses } } },
    async (request, reply) => sendPage(reply, await list(request, reply, request.query)),
  );

  app.get(
    '/projects/:id/tasks',
    {
      schema: {
        tags: ['tasks'],
        description: listDescription,
        params: IdParams,
        querystring: Type.Omit(TaskListQuery, ['projectId']),
        response: { 200: PagedEnvelope(Task), ...ErrorResponses },
      },
    },
    async (request, reply) => {
      if (!(await getProject(deps.db, request.params.id))) throw notFound(`Project ${request.params.id} not found`, 'PROJECT_NOT_FOUND');
      return sendPage(reply, await list(request, reply, request.query as Static<typeof TaskListQuery>, request.params.id));
    },
  );

  app.get(
    '/tasks/:id',
    { schema: { tags: ['tasks'], description: detailDescription, params: IdParams, response: { 200: Envelope(TaskDetail), ...ErrorResponses } } },
    async (request, reply) => {
    const load = () => loadTaskDetail(deps, request.params.id);
    const { value, outcome } =
      detailCache && !noCache(request) ? await detailCache.read(request.params.id, load) : { value: await load(), outcome: 'bypass' as const };
    if (!value) throw notFound(`Task ${request.params.id} not found`, 'TASK_NOT_FOUND');
    reply.header('x-armada-cache', outcome);
    return ok(version, taskDetail(value));
    },
  );

  app.post('/tasks', { schema: { tags: ['tasks'], body: CreateTaskBody, response: { 201: Envelope(Task), ...ErrorResponses } } }, async (request, reply) => {
    const b = request.body;
    if (!(await getProject(deps.db, b.projectId))) throw notFound(`Project ${b.projectId} not found`, 'PROJECT_NOT_FOUND');
    let row: TaskRow;
    try {
      row = await withTransaction(deps.db, async (c) => {
        const inserted = await insertTask(c, {
        id: newId(),
        projectId: b.projectId,
        title: b.title.trim(),
        description: b.description ?? '',
        priority: b.priority ?? 'medium',
        labels: storedLabels(b.labels ?? []),
        assignee: b.assignee?.trim() ?? null,
        createdBy: actingUser(request, deps.localUser),
        metadata: b.metadata ?? {},
        });
        await publishTaskCreated(c, inserted);
        return inserted;
      });
    } catch (err) {
      // the project was deleted between the check and the insert
      if ((err as { code?: string }).code === FOREIGN_KEY_VIOLATION) throw notFound(`Project ${b.projectId} not found`, 'PROJECT_NOT_FOUND');
      throw err;
    }
    return reply.code(201).send(ok(version, taskView(row)));
  });

  app.patch(
    '/tasks/:id',
    { schema: { tags: ['tasks'], params: IdParams, body: PatchTaskBody, response: { 200: Envelope(Task), ...ErrorResponses } } },
    async (request) => {
      const b = request.body;
      const [row] = await withTransaction(deps.db, (c) => patchTasks(c, [request.params.id], b));
      if (!row) throw notFound(`Task ${request.params.id} not found`, 'TASK_NOT_FOUND');
      return ok(version, taskView(row));
    },
  );

  app.delete(
    '/tasks/:id',
    { schema: { tags: ['tasks'], params: IdParams, response: { 200: Envelope(DeletedTask), ...ErrorResponses } } },
    async (request) => {
      if (!(await getTask(deps.db, request.params.id))) throw notFound(`Task ${request.params.id} not found`);
      // the attempts' worktrees and branches go with the task, not at the next janitor run
      const cleanup = await removeAttemptsOfTasks(serviceDeps(deps), [request.params.id]);
      const [deleted] = await deleteWithApprovals(serviceDeps(deps), { taskIds: [request.params.id] }, async (c) => {
        const rows = await deleteTasks(c, [request.params.id]);
        for (const r of rows) await publishTaskDeleted(c, r);
        return rows;
      });
      if (!deleted) throw notFound(`Task ${request.params.id} not found`);
      return ok(version, { deleted: true as const, taskId: deleted.id, ...cleanup });
    },
  );

  app.post(
    '/tasks/bulk/update',
    { schema: { tags: ['tasks'], body: BulkUpdateBody, response: { 200: Envelope(BulkResult), ...ErrorResponses } } },
    async (request) => {
      const { taskIds, updates } = request.body;
      const rows = await withTransaction(deps.db, (c) => patchTasks(c, taskIds, updates));
      const found = new Set(rows.map((r) => r.id));
      return ok(version, {
        updated: rows.length,
        taskIds: taskIds.filter((id) => found.has(id)),
        notFound: taskIds.filter((id) => !found.has(id)),
        tasks: rows.map(taskView),
      });
    },
  );

  app.post(
    '/tasks/bulk/delete',
    { schema: { tags: ['tasks'], body: BulkDeleteBody, response: { 200: Envelope(BulkResult), ...ErrorResponses } } },
    async (request) => {
      const { taskIds } = request.body;
      await removeAttemptsOfTasks(serviceDeps(deps), taskIds);
      const deleted = new Set(
        await deleteWithApprovals(serviceDeps(deps), { taskIds }, async (c) => {
          const rows = await deleteTasks(c, taskIds);
          for (const r of rows) await publishTaskDeleted(c, r);
          return rows.map((r) => r.id);
        }),
      );
      return ok(version, {
        deleted: deleted.size,
        taskIds: taskIds.filter((id) => deleted.has(id)),
        notFound: taskIds.filter((id) => !deleted.has(id)),
      });
    },
  );
};
