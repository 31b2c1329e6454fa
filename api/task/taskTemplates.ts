/**
 * Task templates: list (pagination, category, name search), get, create, update, delete, and
 * POST /api/task-templates/:id/apply {projectId} which creates the template's tasks in a project, in `order`, in one
 * transaction (task.created for each). See docs/templates-and-drafts.md.
 */
import type { FastifyPluginAsync } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { conflict, notFound } from '../../lib/errors';
import { newId } from '../../lib/ids';
import { FOREIGN_KEY_VIOLATION, withTransaction } from '../../lib/db/pool';
import { getProject } from '../../lib/db/projects';
import { insertTask, type TaskRow } from '../../lib/db/tasks';
import { deleteTemplate, getTemplate, insertTemplate, listTemplates, updateTemplate, type TaskTemplateRow, type TemplateMetadata, type TemplateTask } from '../../lib/db/taskTemplates';
import { publishTaskCreated } from '../../lib/events/taskEvents';
import { actingUser } from '../http/actingUser';
import { ok, okPage, pagination } from '../http/envelope';
import { NAME_PATTERN, TEXT_PATTERN } from '../http/inputPolicy';
import { Envelope, ErrorResponses, Id, IdParams, PagedEnvelope, PageQuery } from '../http/schemas';
import type { TaskPluginOptions } from './deps';
import { Task } from './taskSchemas';
import { taskView } from './tasks';

// names and titles are stored trimmed, so each needs a character that is not white space (as task titles do)
const TemplateTaskSchema = Type.Object(
  {
    title: Type.String({ minLength: 1, maxLength: 500, pattern: NAME_PATTERN }),
    description: Type.String({ maxLength: 10_000, pattern: TEXT_PATTERN }),
    order: Type.Integer({ minimum: -2_147_483_648, maximum: 2_147_483_647 }),
    estimatedTime: Type.Optional(Type.Number({ minimum: 0, maximum: 1_000_000_000 })),
  },
  { additionalProperties: false },
);
const MetadataSchema = Type.Object({ totalEstimatedTime: Type.Number(), difficulty: Type.Optional(Type.String()) }, { additionalProperties: true });

const Template = Type.Object({
  id: Type.String(),
  name: Type.String(),
  description: Type.String(),
  category: Type.String(),
  tasks: Type.Array(TemplateTaskSchema),
  metadata: MetadataSchema,
  createdAt: Type.String(),
  updatedAt: Type.String(),
});

const InputMetadata = Type.Object({ difficulty: Type.Optional(Type.String({ maxLength: 100 })) }, { additionalProperties: true });
const Tasks = Type.Array(TemplateTaskSchema, { minItems: 1, maxItems: 200 });
const CreateBody = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 200, pattern: NAME_PATTERN }),
    description: Type.String({ maxLength: 10_000, pattern: TEXT_PATTERN }),
    category: Type.String({ minLength: 1, maxLength: 100, pattern: NAME_PATTERN }),
    tasks: Tasks,
    metadata: Type.Optional(InputMetadata),
  },
  { additionalProperties: false },
);
const UpdateBody = Type.Object(
  {
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 200, pattern: NAME_PATTERN })),
    description: Type.Optional(Type.String({ maxLength: 10_000, pattern: TEXT_PATTERN })),
    category: Type.Optional(Type.String({ minLength: 1, maxLength: 100, pattern: NAME_PATTERN })),
    tasks: Type.Optional(Tasks),
    metadata: Type.Optional(InputMetadata),
  },
  { additionalProperties: false, minProperties: 1 },
);
const ListQuery = Type.Object(
  {
    ...PageQuery,
    // as categories are stored (trimmed, not blank): an empty or blank one matched nothing, a padded one nothing either
    category: Type.Optional(Type.String({ minLength: 1, maxLength: 100, pattern: NAME_PATTERN, description: 'a category as stored; blanks around it are ignored' })),
    search: Type.Optional(Type.String({ maxLength: 200 })),
  },
  { additionalProperties: false },
);
const ApplyBody = Type.Object({ projectId: Id() }, { additionalProperties: false });
const Applied = Type.Object({ templateId: Type.String(), projectId: Type.String(), tasks: Type.Array(Task) });

const templateView = (t: TaskTemplateRow) => ({
  id: t.id,
  name: t.name,
  description: t.description,
  category: t.category,
  tasks: t.tasks,
  metadata: t.metadata,
  createdAt: t.created_at.toISOString(),
  updatedAt: t.updated_at.toISOString(),
});

const sortTasks = (tasks: TemplateTask[]) =>
  [...tasks]
    .sort((a, b) => a.order - b.order)
    .map((t) => ({ title: t.title.trim(), description: t.description, order: t.order, ...(t.estimatedTime !== undefined ? { estimatedTime: t.estimatedTime } : {}) }));

/** totalEstimatedTime is derived from the tasks; other metadata keys (difficulty…) are the client's. */
function metadataFor(tasks: TemplateTask[], given: Record<string, unknown> | undefined, previous?: TemplateMetadata): TemplateMetadata {
  return { ...(previous ?? {}), ...(given ?? {}), totalEstimatedTime: tasks.reduce((s, t) => s + (t.estimatedTime ?? 0), 0) };
}

export const taskTemplateRoutes: FastifyPluginAsync<TaskPluginOptions> = async (fastify, { deps }) => {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const version = deps.config.version;
  const tags = ['task-templates'];
  const missing = (id: string) => notFound(`Task template ${id} not found`);

  app.get('/task-templates', { schema: { tags, querystring: ListQuery, response: { 200: PagedEnvelope(Template), ...ErrorResponses } } }, async (request) => {
    const { page, limit, category, search } = request.query;
    const { rows, total } = await listTemplates(deps.db, { category: category?.trim(), search, limit, offset: (page - 1) * limit });
    return okPage(version, rows.map(templateView), pagination(page, limit, total));
  });

  app.get('/task-templates/:id', { schema: { tags, params: IdParams, response: { 200: Envelope(Template), ...ErrorResponses } } }, async (request) => {
    const t = await getTemplate(deps.db, request.params.id);
    if (!t) throw missing(request.params.id);
    return ok(version, templateView(t));
  });

  app.post('/task-templates', { schema: { tags, body: CreateBody, response: { 200: Envelope(Template), ...ErrorResponses } } }, async (request) => {
    const b = request.body;
    const tasks = sortTasks(b.tasks);
    const row = await insertTemplate(deps.db, {
      id: newId(),
      name: b.name.trim(),
      description: b.description,
      category: b.category.trim(),
      tasks,
      metadata: metadataFor(tasks, b.metadata),
    });
    return ok(version, templateView(row));
  });

  app.put('/task-templates/:id', { schema: { tags, params: IdParams, body: UpdateBody, response: { 200: Envelope(Template), ...ErrorResponses } } }, async (request) => {
    const b = request.body;
    const row = await withTransaction(deps.db, async (c) => {
      // locked: metadata is recomputed from this copy (totalEstimatedTime from the tasks, the other keys kept), so a
      // concurrent update must wait and read what this one wrote, or one of the two changes would be lost
      const current = await getTemplate(c, request.params.id, true);
      if (!current) throw missing(request.params.id);
      const tasks = b.tasks ? sortTasks(b.tasks) : undefined;
      return updateTemplate(c, request.params.id, {
        name: b.name?.trim(),
        description: b.description,
        category: b.category?.trim(),
        tasks,
        metadata: tasks || b.metadata ? metadataFor(tasks ?? current.tasks, b.metadata, current.metadata) : undefined,
      });
    });
    if (!row) throw missing(request.params.id);
    return ok(version, templateView(row));
  });

  app.delete(
    '/task-templates/:id',
    { schema: { tags, params: IdParams, response: { 200: Envelope(Type.Object({ deleted: Type.Literal(true), templateId: Type.String() })), ...ErrorResponses } } },
    async (request) => {
      if (!(await deleteTemplate(deps.db, request.params.id))) throw missing(request.params.id);
      return ok(version, { deleted: true as const, templateId: request.params.id });
    },
  );

  // The target of apply is the template (a missing one is 404); an unknown project in the body is a conflict with
  // what exists, 409 with the code PROJECT_NOT_FOUND (docs/templates-and-drafts.md): a 404 here would say the template
  // just created is missing, and a fuzzer's stateful checks read it so (schemathesis ST302)
  const unknownProject = (projectId: string) =>
    conflict(`Project ${projectId} not found: apply the template to an existing project (GET /api/projects lists them)`, 'PROJECT_NOT_FOUND', { projectId: 'no such project' });

  app.post(
    '/task-templates/:id/apply',
    { schema: { tags, params: IdParams, body: ApplyBody, response: { 201: Envelope(Applied), ...ErrorResponses } } },
    async (request, reply) => {
      const t = await getTemplate(deps.db, request.params.id);
      if (!t) throw missing(request.params.id);
      const { projectId } = request.body;
      if (!(await getProject(deps.db, projectId))) throw unknownProject(projectId);
      const createdBy = actingUser(request, deps.localUser);
      let rows: TaskRow[];
      try {
        rows = await withTransaction(deps.db, async (c) => {
          const out: TaskRow[] = [];
          for (const task of sortTasks(t.tasks)) {
            const row = await insertTask(c, {
              id: newId(),
              projectId,
              title: task.title,
              description: task.description,
              priority: 'medium',
              labels: [],
              assignee: null,
              createdBy,
              metadata: { templateId: t.id, templateOrder: task.order, ...(task.estimatedTime !== undefined ? { estimatedTime: task.estimatedTime } : {}) },
            });
            await publishTaskCreated(c, row);
            out.push(row);
          }
          return out;
        });
      } catch (err) {
        if ((err as { code?: string }).code === FOREIGN_KEY_VIOLATION) throw unknownProject(projectId);
        throw err;
      }
      return reply.code(201).send(ok(version, { templateId: t.id, projectId, tasks: rows.map(taskView) }));
    },
  );
};
