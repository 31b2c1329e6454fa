/**
 * Workflow routes: /api/v1/workflows… A workflow is an ordered list of tasks (script or flow), optionally on a cron
 * schedule in an IANA zone (a Temporal Schedule `schedule:<name>`). A run answers at once; the execution runs in
 * Temporal (workflowRunWorkflow), so it survives an API restart.
 */
import type { FastifyPluginAsync } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { Client } from '@temporalio/client';
import { AppError, conflict, invalidRequest, notFound } from '../../lib/errors';
import { isUuid, newId } from '../../lib/ids';
import { withTransaction, type Queryable } from '../../lib/db/pool';
import { UNIQUE_VIOLATION } from '../../lib/db/projects';
import { failExecution, insertManualExecution } from '../../lib/db/schedulerExecutions';
import { getSource, getSourceByName } from '../../lib/db/schedulerSources';
import { deleteWorkflow, getWorkflow, insertWorkflow, listWorkflows, type WorkflowRow, type WorkflowTask } from '../../lib/db/schedulerWorkflows';
import { cronZone, timezoneError } from '../../lib/scheduler/cron';
import { schedulerSettings } from '../../lib/scheduler/settings';
import { WORKFLOW_RUN_TYPE, createSchedule, deleteSchedule, nextRunOf, specRejection, type WorkflowRunInput } from '../../lib/scheduler/temporalSchedules';
import type { DetailServiceDeps } from '../detailServiceDeps';
import type { SchedulerPluginOptions } from './deps';
import { CreateWorkflowBody, CreatedWorkflow, DeletedWorkflow, Detail, DetailErrors, RunResult, Workflow, WorkflowList, WorkflowParams } from './schemas';

export const WORKFLOW_NOT_FOUND = 'Workflow not found';

/** The workflow named `name`, or 404 "Workflow not found". */
export async function mustGetWorkflow(db: Queryable, name: string): Promise<WorkflowRow> {
  const w = await getWorkflow(db, name);
  if (!w) throw notFound(WORKFLOW_NOT_FOUND);
  return w;
}

const iso = (d: Date | null): string | null => (d ? d.toISOString() : null);

export const temporalUnavailable = (what: string) => new AppError(503, 'SERVICE_UNAVAILABLE', `${what}: Temporal is unavailable`);

/** The client, or a 503 with a clear detail when Temporal cannot be reached. */
export async function temporalClient(deps: DetailServiceDeps, what: string): Promise<Client> {
  try {
    return await deps.temporal.client();
  } catch {
    throw temporalUnavailable(what);
  }
}

/** Next run per Temporal; null (not an error) when Temporal cannot be asked right now. */
export async function safeNextRun(deps: DetailServiceDeps, w: WorkflowRow): Promise<string | null> {
  if (!w.schedule || !w.enabled) return null;
  try {
    return iso(await nextRunOf(await deps.temporal.client(), w.name));
  } catch (err) {
    deps.logger.warn({ err: { message: (err as Error).message }, workflow: w.name }, 'could not read a schedule from Temporal');
    return null;
  }
}

export function taskView(t: WorkflowTask) {
  return t.type === 'script'
    ? { name: t.name, type: t.type, script: t.script, ...(t.timeout ? { timeout: t.timeout } : {}) }
    : { name: t.name, type: t.type, source: t.source, flow: t.flow, ...(t.input !== undefined ? { input: t.input } : {}), ...(t.timeout ? { timeout: t.timeout } : {}) };
}

export async function workflowView(deps: DetailServiceDeps, w: WorkflowRow & { last_run?: Date | null }) {
  return {
    name: w.name,
    description: w.description,
    schedule: w.schedule,
    timezone: w.timezone,
    jitter: Math.round(w.jitter_ms / 1000),
    enabled: w.enabled,
    lastRun: iso(w.last_run ?? null),
    nextRun: await safeNextRun(deps, w),
    tasks: w.tasks.map(taskView),
    createdAt: w.created_at.toISOString(),
  };
}

/** Checks a zone; throws 400 with the precise reason. The cron string is Temporal's to judge (scheduleError). */
export function checkZone(timezone: string | undefined): void {
  const err = timezone !== undefined ? timezoneError(timezone) : null;
  if (err) throw invalidRequest(err);
}

/** The zone of a schedule: the one given, else a `CRON_TZ=` prefix's, else `fallback`. */
export function scheduleZone(given: string | undefined, schedule: string | null | undefined, fallback: string): string {
  return given ?? (schedule ? cronZone(schedule) : undefined) ?? fallback;
}

/** A failed create/update of a Temporal Schedule as the 400 to answer: Temporal's own reason when it rejected the spec. */
export function scheduleError(err: unknown, cron: string, what: string): AppError {
  const reason = specRejection(err);
  return invalidRequest(reason !== null ? `Invalid cron expression "${cron}": ${reason}` : `${what}: ${(err as Error).message}`);
}

export const workflowRoutes: FastifyPluginAsync<SchedulerPluginOptions> = async (fastify, { deps }) => {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const settings = schedulerSettings(deps.config);
  const mustGet = (name: string): Promise<WorkflowRow> => mustGetWorkflow(deps.db, name);

  app.get('/workflows', { schema: { tags: ['workflows'], response: { 200: WorkflowList, ...DetailErrors } } }, async () => {
    const rows = await listWorkflows(deps.db);
    return { workflows: await Promise.all(rows.map((w) => workflowView(deps, w))) };
  });

  app.get(
    '/workflows/:name',
    { schema: { tags: ['workflows'], params: WorkflowParams, response: { 200: Workflow, ...DetailErrors } } },
    async (request) => {
      const w = await mustGet(request.params.name);
      const last = (await listWorkflows(deps.db)).find((x) => x.name === w.name);
      return workflowView(deps, last ?? w);
    },
  );

  app.post(
    '/workflows',
    { schema: { tags: ['workflows'], body: CreateWorkflowBody, response: { 201: CreatedWorkflow, ...DetailErrors, 409: Detail } } },
    async (request, reply) => {
      const body = request.body;
      const schedule = body.schedule ?? null;
      const timezone = scheduleZone(body.timezone, schedule, 'UTC');
      checkZone(timezone);
      const seen = new Set<string>();
      const tasks: WorkflowTask[] = [];
      for (const t of body.tasks) {
        if (seen.has(t.name)) throw conflict(`Task name "${t.name}" is used twice`); // no schema can say names are unique: 409 like a taken workflow name
        seen.add(t.name);
        // the schema's if/then guarantees script (script tasks) and source + flow (flow tasks)
        if (t.type === 'script') {
          tasks.push({ name: t.name, type: 'script', script: t.script as string, ...(t.timeout ? { timeout: t.timeout } : {}) });
        } else {
          if (t.source === undefined || t.flow === undefined) throw invalidRequest(`Task "${t.name}": a flow task needs "source" and "flow"`);
          const source = (isUuid(t.source) ? await getSource(deps.db, t.source) : undefined) ?? (await getSourceByName(deps.db, t.source));
          if (!source) throw invalidRequest(`Task "${t.name}" names an unknown source "${t.source}"`);
          tasks.push({ name: t.name, type: 'flow', source: source.id, flow: t.flow, ...(t.input !== undefined ? { input: t.input } : {}), ...(t.timeout ? { timeout: t.timeout } : {}) });
        }
      }
      const enabled = body.enabled ?? true;
      const jitterMs = (body.jitter ?? 0) * 1000;
      const client = schedule ? await temporalClient(deps, 'Error creating schedule') : undefined;
      let row: WorkflowRow;
      try {
        row = await withTransaction(deps.db, async (c) => {
          const inserted = await insertWorkflow(c, { name: body.name, description: body.description ?? '', schedule, timezone, jitterMs, tasks });
          if (!enabled) await c.query('UPDATE scheduler_workflows SET enabled = false WHERE name = $1', [body.name]);
          // The schedule is created before COMMIT: a Temporal failure leaves no row behind.
          if (schedule && client) {
            try {
              await createSchedule(client, {
                workflow: body.name,
                cron: schedule,
                timezone,
                jitterMs,
                paused: !enabled,
                taskQueue: deps.config.temporal.taskQueue,
                catchupWindowMs: settings.catchupWindowMs,
              });
            } catch (err) {
              request.log.warn({ err: { message: (err as Error).message }, workflow: body.name }, 'creating a schedule failed');
              throw scheduleError(err, schedule, 'Error creating schedule');
            }
          }
          return { ...inserted, enabled };
        });
      } catch (err) {
        if ((err as { code?: string }).code === UNIQUE_VIOLATION) throw conflict(`Workflow ${body.name} already exists`); // a schema cannot say a name is taken: 409, not 400
        throw err;
      }
      return reply.code(201).send({ name: row.name, status: 'created' as const, nextRun: await safeNextRun(deps, row) });
    },
  );

  app.delete(
    '/workflows/:name',
    { schema: { tags: ['workflows'], params: WorkflowParams, response: { 200: DeletedWorkflow, ...DetailErrors } } },
    async (request) => {
      const w = await mustGet(request.params.name);
      if (w.schedule) await deleteSchedule(await temporalClient(deps, 'Error deleting schedule'), w.name);
      if (!(await deleteWorkflow(deps.db, w.name))) throw notFound(WORKFLOW_NOT_FOUND);
      return { name: w.name, deleted: true };
    },
  );

  app.post(
    '/workflows/:name/run',
    { schema: { tags: ['workflows'], params: WorkflowParams, response: { 200: RunResult, ...DetailErrors } } },
    async (request) => {
      const w = await mustGet(request.params.name);
      const client = await temporalClient(deps, 'Could not start the execution');
      const executionId = newId();
      const startedAt = new Date().toISOString();
      const workflowId = `execution:${executionId}`;
      await insertManualExecution(deps.db, {
        id: executionId,
        workflow: w.name,
        temporalWorkflowId: workflowId,
        startedAt,
        tasks: w.tasks.map((t) => ({ name: t.name, type: t.type, status: 'pending', startedAt: null, completedAt: null, output: '' })),
      });
      const input: WorkflowRunInput = { workflow: w.name, trigger: 'manual', executionId, startedAt };
      try {
        await client.workflow.start(WORKFLOW_RUN_TYPE, { workflowId, taskQueue: deps.config.temporal.taskQueue, args: [input] });
      } catch (err) {
        request.log.warn({ err: { message: (err as Error).message }, workflow: w.name }, 'starting an execution failed');
        await failExecution(deps.db, executionId, 'Could not start the execution');
        throw temporalUnavailable('Could not start the execution');
      }
      return { executionId, workflow: w.name, status: 'running' as const, startedAt };
    },
  );
};
