/**
 * Workflow routes: /api/v1/workflows… A workflow is an ordered list of tasks (script or flow), optionally on a cron
 * schedule in an IANA zone (a Temporal Schedule `schedule:<name>`). A run answers at once; the execution runs in
 * Temporal (workflowRunWorkflow), so it survives an API restart.
 */
import type { FastifyBaseLogger, FastifyPluginAsync, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { Client } from '@temporalio/client';
import { type AppError, conflict, invalidRequest, notFound } from '../../lib/errors';
import { newId } from '../../lib/ids';
import { withTransaction, type Queryable } from '../../lib/db/pool';
import { UNIQUE_VIOLATION } from '../../lib/db/projects';
import { lockSources, samePlatform } from '../../lib/db/schedulerSources';
import { getDefaultSchedule, listSchedules, lockTemporalIdsOf, lockTemporalSchedule, temporalIdsOf } from '../../lib/db/schedulerSchedules';
import { isTemporalUnreachable } from '../../lib/temporal/client';
import { runningRunsOf, type RunningRun } from '../../lib/db/schedulerExecutions';
import { deleteWorkflow, getWorkflow, insertWorkflow, listWorkflows, lockWorkflows, type FlowTask, type WorkflowRow, type WorkflowTask } from '../../lib/db/schedulerWorkflows';
import { cronZone, MAX_SCHEDULE_CHARS, neverFiresError, scheduleExpressionError, temporalZoneRejection, timezoneError } from '../../lib/scheduler/cron';
import { schedulerSettings } from '../../lib/scheduler/settings';
import { createSchedule, deleteSchedule, scheduleIdOf, specRejection } from '../../lib/scheduler/temporalSchedules';
import type { DetailServiceDeps } from '../detailServiceDeps';
import type { SchedulerPluginOptions } from './deps';
import { scheduleView, targetOf, timingOf } from './scheduleViews';
import { resolveFlowTask, type FlowListCache } from './flowTasks';
import { CreateWorkflowBody, CreatedWorkflow, DeletedWorkflow, Detail, DetailErrors, PlatformErrors, RunResult, Workflow, WorkflowList, WorkflowParams } from './schemas';
import { startExecution } from './startExecution';
import { stopRuns } from './stopRuns';
import { resyncScheduleLater } from './scheduleResync';
import { TemporalUnavailable, temporalClient, temporalUnavailable, withinDeadline } from './temporalAccess';

export { temporalClient, temporalUnavailable } from './temporalAccess';

export const WORKFLOW_NOT_FOUND = 'Workflow not found';
const CREATE_FAILED = 'Error creating schedule';
const DELETE_FAILED = 'Error deleting schedule';
const STOP_FAILED = 'Error stopping executions';

/**
 * When `err` says Temporal did not answer a call on these Temporal Schedules (TemporalUnavailable: the call may still
 * take effect), resyncs them with their rows once Temporal answers and returns that 503 to throw; else undefined.
 */
export function unknownOutcomeResynced(deps: DetailServiceDeps, err: unknown, temporalIds: string[], log: FastifyBaseLogger): TemporalUnavailable | undefined {
  if (!(err instanceof TemporalUnavailable)) return undefined;
  for (const id of temporalIds) resyncScheduleLater(deps, id, log);
  return err;
}

/** The workflow named `name`, or 404 "Workflow not found". */
export async function mustGetWorkflow(db: Queryable, name: string): Promise<WorkflowRow> {
  const w = await getWorkflow(db, name);
  if (!w) throw notFound(WORKFLOW_NOT_FOUND);
  return w;
}

const iso = (d: Date | null): string | null => (d ? d.toISOString() : null);

/** The earliest next run of a workflow's schedules; null when none is upcoming (or Temporal cannot be asked now). */
export async function nextRunOfWorkflow(deps: DetailServiceDeps, name: string): Promise<string | null> {
  const views = await Promise.all((await listSchedules(deps.db, name)).map((s) => scheduleView(deps, s)));
  const times = views.flatMap((v) => (v.nextRun ? [v.nextRun] : [])).sort();
  return times[0] ?? null;
}

export function taskView(t: WorkflowTask) {
  return t.type === 'script'
    ? { name: t.name, type: t.type, script: t.script, ...(t.timeout ? { timeout: t.timeout } : {}) }
    : { name: t.name, type: t.type, source: t.source, flow: t.flow, ...(t.flowName !== undefined ? { flowName: t.flowName } : {}), ...(t.input !== undefined ? { input: t.input } : {}), ...(t.timeout ? { timeout: t.timeout } : {}) };
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
    nextRun: await nextRunOfWorkflow(deps, w.name),
    tasks: w.tasks.map(taskView),
    createdAt: w.created_at.toISOString(),
  };
}

/** The 400 refusing a schedule expression: the expression (as JSON writes it, so a tab or line break shows) and why. */
export const invalidExpression = (expr: string, reason: string): AppError => invalidRequest(`Invalid cron expression ${JSON.stringify(expr)}: ${reason}`);

/**
 * preValidation of every route taking a `schedule` expression (creating a workflow, adding a schedule, PATCHing one):
 * an expression outside the accepted forms (lib/scheduler/cron.ts, scheduleExpressionError: 5 fields, a macro,
 * `@every` of whole seconds, at least 1s) is a 400 saying what is wrong and what is accepted, before the schema's
 * pattern (the same form) could answer with the bare pattern, and before anything is stored or sent to Temporal.
 * Other types are the schema's to refuse.
 */
export async function refuseScheduleExpression(request: FastifyRequest): Promise<void> {
  const expr = (request.body as { schedule?: unknown } | null | undefined)?.schedule;
  // a string past the schema's 200 characters is the schema's 400 (`schedule must NOT have more than 200 characters`),
  // not echoed back in a detail as long as the request
  if (typeof expr !== 'string' || expr.length > MAX_SCHEDULE_CHARS) return;
  const reason = scheduleExpressionError(expr);
  if (reason) throw invalidExpression(expr, reason);
}

/**
 * Checks the zone a request gives (`given`: its `timezone`, or a `CRON_TZ=` prefix's zone), then the cron string and
 * zone the schedule will have (`cron`, `zone`: the request's or the stored ones) for what Temporal would take silently
 * or refuse in words that do not help: a `CRON_TZ=` zone other than the schedule's (Temporal: `conflicting timezone
 * names`), and a string that never fires in its zone (its schedule would stay `active` with no next run). Throws the
 * 400 with the precise reason. The form was checked before (refuseScheduleExpression); the values in it are
 * Temporal's to judge (scheduleError).
 */
export function checkZone(given: string | undefined, cron?: string | null, zone: string | undefined = given): void {
  const err = given !== undefined ? timezoneError(given) : null;
  if (err) throw invalidRequest(err);
  if (!cron) return;
  const prefixed = cronZone(cron);
  if (prefixed !== undefined && zone !== undefined && prefixed !== zone && !/^\S+\s+@every/.test(cron)) {
    throw invalidExpression(cron, `its CRON_TZ= zone "${prefixed}" is not the schedule's timezone "${zone}"; name the zone once, in "timezone" or in the prefix`);
  }
  const zoneOf = zone ?? prefixed ?? 'UTC';
  const never = timezoneError(zoneOf) ? null : neverFiresError(cron, zoneOf);
  if (never) throw invalidExpression(cron, `it never fires: ${never}`);
}

/** The zone of a schedule: the one given, else a `CRON_TZ=` prefix's, else `fallback`. */
export function scheduleZone(given: string | undefined, schedule: string | null | undefined, fallback: string): string {
  return given ?? (schedule ? cronZone(schedule) : undefined) ?? fallback;
}

/**
 * A failed create/update of a Temporal Schedule as the 400 to answer: Temporal's own reason when it rejected the spec
 * (of a cron schedule: naming the cron string; of a one-time schedule: its calendar time).
 */
export function scheduleError(err: unknown, cron: string | null, what: string): AppError {
  if (isTemporalUnreachable(err)) return temporalUnavailable(what); // Temporal's outage is no client's mistake
  const reason = specRejection(err);
  if (reason === null) return invalidRequest(`${what}: ${(err as Error).message}`);
  const zone = temporalZoneRejection(reason);
  if (zone) return invalidRequest(zone);
  return cron !== null ? invalidExpression(cron, reason) : invalidRequest(`Invalid schedule time: ${reason}`);
}

/**
 * Deletes the Temporal Schedules of rows a workflow deletion has just removed (it has committed: this never throws);
 * one Temporal does not delete now is deleted once it answers (scheduleResync.ts: a Schedule without a row goes).
 */
async function deleteLateSchedules(deps: DetailServiceDeps, temporalIds: string[], log: FastifyBaseLogger): Promise<void> {
  try {
    const client = await temporalClient(deps, DELETE_FAILED);
    await withinDeadline(client, DELETE_FAILED, async () => {
      for (const id of temporalIds) await deleteSchedule(client, id);
    });
  } catch (err) {
    log.warn({ err: { message: (err as Error).message }, schedules: temporalIds }, 'could not delete the schedules of a deleted workflow; deleting them once Temporal answers');
    for (const id of temporalIds) resyncScheduleLater(deps, id, log);
  }
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
    { schema: { tags: ['workflows'], body: CreateWorkflowBody, response: { 201: CreatedWorkflow, ...DetailErrors, 409: Detail, ...PlatformErrors } }, preValidation: refuseScheduleExpression },
    async (request, reply) => {
      const body = request.body;
      const schedule = body.schedule ?? null;
      const timezone = scheduleZone(body.timezone, schedule, 'UTC');
      checkZone(timezone, schedule);
      const seen = new Set<string>();
      const tasks: WorkflowTask[] = [];
      const flowLists: FlowListCache = new Map();
      for (const t of body.tasks) {
        if (seen.has(t.name)) throw conflict(`Task name "${t.name}" is used twice`); // no schema can say names are unique: 409 like a taken workflow name
        seen.add(t.name);
        // the schema's if/then guarantees script (script tasks) and source + flow (flow tasks)
        if (t.type === 'script') {
          tasks.push({ name: t.name, type: 'script', script: t.script as string, ...(t.timeout ? { timeout: t.timeout } : {}) });
        } else {
          if (t.source === undefined || t.flow === undefined) throw invalidRequest(`Task "${t.name}": a flow task needs "source" and "flow"`);
          tasks.push(await resolveFlowTask(deps.db, deps.keys.encryption, settings.sourceTimeoutMs, { ...t, source: t.source, flow: t.flow }, flowLists));
        }
      }
      const enabled = body.enabled ?? true;
      const jitterMs = (body.jitter ?? 0) * 1000;
      const client = schedule ? await temporalClient(deps, 'Error creating schedule') : undefined;
      let row: WorkflowRow;
      try {
        row = await withTransaction(deps.db, async (c) => {
          // a source deleted since its flow task was resolved: refused as an unknown one (its row's foreign key failed: a 500)
          const flowTasks = tasks.filter((t): t is FlowTask => t.type === 'flow');
          const locked = await lockSources(c, [...new Set(flowTasks.map((t) => t.source))]);
          const orphan = flowTasks.find((t) => !locked.has(t.source));
          if (orphan) throw invalidRequest(`Task "${orphan.name}" names an unknown source "${orphan.source}": it was deleted while the workflow was being created`);
          // a source moved to another platform (a PATCH of url, type or key) since its flows were looked up: those were
          // the old platform's, and the PATCH's flow check could not see this workflow (docs/scheduler.md#moving-a-source).
          // A PATCH that comes after waits for this commit (lockSourceForChange) and checks this workflow's tasks.
          const moved = flowTasks.find((t) => {
            const then = flowLists.get(t.source)?.source;
            const now = locked.get(t.source);
            return then !== undefined && now !== undefined && !samePlatform(then, now);
          });
          if (moved) {
            throw conflict(
              `Task "${moved.name}": source "${locked.get(moved.source)?.name}" was changed (its url, source_type or api_key) while the workflow was being created, after its flows were looked up on the platform it named before; nothing was created: send the request again`,
            );
          }
          const inserted = await insertWorkflow(c, {
            name: body.name,
            description: body.description ?? '',
            schedule,
            timezone,
            jitterMs,
            enabled,
            tasks,
            defaultSchedule: { id: newId(), temporalId: scheduleIdOf(body.name) },
          });
          // The schedule is created before COMMIT: a Temporal failure leaves no row behind.
          const s = await getDefaultSchedule(c, body.name);
          if (s?.cron && client) {
            await lockTemporalSchedule(c, s.temporal_id); // a resync of this id waits for the commit
            try {
              await withinDeadline(client, CREATE_FAILED, () =>
                createSchedule(client, {
                  target: targetOf(s),
                  timing: timingOf(s),
                  paused: !enabled,
                  taskQueue: deps.config.temporal.taskQueue,
                  catchupWindowMs: settings.catchupWindowMs,
                }),
              );
            } catch (err) {
              request.log.warn({ err: { message: (err as Error).message }, workflow: body.name }, 'creating a schedule failed');
              throw unknownOutcomeResynced(deps, err, [s.temporal_id], request.log) ?? scheduleError(err, schedule, CREATE_FAILED);
            }
          }
          return inserted;
        });
      } catch (err) {
        if ((err as { code?: string }).code === UNIQUE_VIOLATION) throw conflict(`Workflow ${body.name} already exists`); // a schema cannot say a name is taken: 409, not 400
        throw err;
      }
      return reply.code(201).send({ name: row.name, status: 'created' as const, nextRun: await nextRunOfWorkflow(deps, row.name) });
    },
  );

  app.delete(
    '/workflows/:name',
    { schema: { tags: ['workflows'], params: WorkflowParams, response: { 200: DeletedWorkflow, ...DetailErrors } } },
    async (request) => {
      const w = await mustGet(request.params.name);
      const temporalIds = await temporalIdsOf(deps.db, [w.name]);
      // the client is had before the transaction below, never in it: connecting to a Temporal that does not answer
      // waits (up to its connect timeout) with nothing locked
      let client: Client | undefined;
      if (temporalIds.length) {
        client = await temporalClient(deps, DELETE_FAILED);
        const scheduler = client;
        try {
          await withinDeadline(scheduler, DELETE_FAILED, async () => {
            for (const id of temporalIds) await deleteSchedule(scheduler, id);
          });
        } catch (err) {
          throw unknownOutcomeResynced(deps, err, temporalIds, request.log) ?? err;
        }
      }
      // Temporal must be there to stop its running executions: without it nothing is deleted (503)
      if (!client && (await runningRunsOf(deps.db, [w.name])).length) client = await temporalClient(deps, STOP_FAILED);
      // Its running executions stop with it (docs/scheduler.md#deleting). Listed under the workflow's lock,
      // so a run started meanwhile is listed or cannot write its row; stopped after the commit, so a stopped run finds
      // its row gone and writes nothing (its rows are its workflow's by id, also once the name is taken again: upsertExecution).
      // A run started between the list above and the lock, with no client had yet: the transaction ends having
      // deleted nothing, the client is had outside it, and the deletion is made again (at most once more).
      let deletion: { runs: RunningRun[]; late: string[] } | undefined;
      while (!deletion) {
        const stopper = client;
        deletion = await withTransaction(deps.db, async (c) => {
          if (!(await lockWorkflows(c, [w.name])).length) throw notFound(WORKFLOW_NOT_FOUND);
          // a Temporal Schedule created since the list above (a PATCH giving the default schedule its first cron, which
          // held its row): deleted after the commit, else it would outlive its row
          const late = (await lockTemporalIdsOf(c, [w.name])).filter((id) => !temporalIds.includes(id));
          const running = await runningRunsOf(c, [w.name]);
          if (running.length && !stopper) return undefined;
          await deleteWorkflow(c, w.name);
          return { runs: running, late };
        });
        if (!deletion) client = await temporalClient(deps, STOP_FAILED);
      }
      const { runs, late } = deletion;
      if (late.length) await deleteLateSchedules(deps, late, request.log);
      if (client && runs.length) await stopRuns(client, deps.db, runs, request.log);
      return { name: w.name, deleted: true };
    },
  );

  app.post(
    '/workflows/:name/run',
    { schema: { tags: ['workflows'], params: WorkflowParams, response: { 200: RunResult, ...DetailErrors } } },
    async (request) => startExecution(deps, await mustGet(request.params.name), { goneDetail: WORKFLOW_NOT_FOUND }, request.log),
  );
};
