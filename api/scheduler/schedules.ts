/**
 * Schedule routes. Every schedule is a row of scheduler_schedules and its own Temporal Schedule; a workflow has any
 * number of them (cron or one-time, each with its own zone and input) under /workflows/{name}/schedules. The spec's
 * /schedules/{workflow} routes act on the workflow's default schedule (the one its own `schedule` field names).
 * A change takes its schedule's change lock (lockScheduleChanges: the writers of one Temporal Schedule take turns),
 * calls Temporal, then writes the row: a Temporal refusal leaves the row as it was, and no row lock is held while
 * Temporal is asked. A change that finds another still waiting for Temporal after SCHEDULE_CHANGE_WAIT_MS is a 409
 * (docs/scheduler.md#concurrent-changes).
 */
import type { FastifyBaseLogger, FastifyPluginAsync } from 'fastify';
import { ScheduleNotFoundError, type Client } from '@temporalio/client';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { type AppError, conflict, invalidRequest, notFound } from '../../lib/errors';
import { isUuid, newId } from '../../lib/ids';
import { FOREIGN_KEY_VIOLATION, withTransaction, type Queryable } from '../../lib/db/pool';
import {
  deleteScheduleRow,
  getDefaultSchedule,
  getSchedule,
  getScheduleById,
  insertSchedule,
  listSchedules,
  lockScheduleChanges,
  lockTemporalSchedule,
  updateSchedule as updateScheduleRow,
  type ScheduleRow,
} from '../../lib/db/schedulerSchedules';
import { cronZone } from '../../lib/scheduler/cron';
import { parseRunAt } from '../../lib/scheduler/oneTime';
import { schedulerSettings } from '../../lib/scheduler/settings';
import {
  createSchedule,
  deleteSchedule,
  extraScheduleIdOf,
  scheduleState,
  setSchedulePaused,
  triggerSchedule,
  updateSchedule,
  type ScheduleTiming,
} from '../../lib/scheduler/temporalSchedules';
import type { DetailServiceDeps } from '../detailServiceDeps';
import type { SchedulerPluginOptions } from './deps';
import { resyncScheduleLater } from './scheduleResync';
import { scheduleView, targetOf, timingOf } from './scheduleViews';
import {
  CreateScheduleBody,
  DeletedSchedule,
  Detail,
  DetailErrors,
  PatchScheduleBody,
  PatchWorkflowScheduleBody,
  Schedule,
  ScheduleList,
  ScheduleParams,
  WorkflowParams,
  WorkflowScheduleParams,
} from './schemas';
import { SCHEDULE_CHANGE_WAIT_MS, withinDeadline } from './temporalAccess';
import { WORKFLOW_NOT_FOUND, checkZone, mustGetWorkflow, refuseScheduleExpression, scheduleError, scheduleZone, temporalClient, unknownOutcomeResynced } from './workflows';

export const SCHEDULE_NOT_FOUND = 'Schedule not found';
const CREATE_FAILED = 'Error creating schedule';
const UPDATE_FAILED = 'Error updating schedule';
const DELETE_FAILED = 'Error deleting schedule';

interface ScheduleChange {
  cron?: string;
  at?: string;
  runAt?: Date;
  timezone?: string;
  jitterMs?: number;
  input?: unknown;
}

/** What a PATCH of a schedule may carry (both PATCH routes). */
type SchedulePatch = { schedule?: string; at?: string; timezone?: string; jitter?: number; input?: unknown };

/**
 * The row of a schedule being changed, read again under its change lock inside the change's transaction (the changes
 * before it have committed): 404 when it went meanwhile (through `/schedules/{workflow}` a default row needs no cron;
 * through the schedule's own route it must still be a schedule); 409 when another change of it is still waiting for
 * Temporal after SCHEDULE_CHANGE_WAIT_MS.
 */
async function lockedRow(c: Queryable, s: ScheduleRow, route: 'default' | 'schedule'): Promise<ScheduleRow> {
  if (!(await lockScheduleChanges(c, s.temporal_id, SCHEDULE_CHANGE_WAIT_MS))) {
    const which = route === 'default' ? `the schedule of workflow ${s.workflow}` : `schedule ${s.id}`;
    throw conflict(`Another change of ${which} is in progress (waiting for Temporal); send this one again once it has finished`);
  }
  const locked = await getScheduleById(c, s.id);
  if (route === 'default' && locked) return locked;
  if (route === 'schedule' && locked && (locked.type === 'one-time' || locked.cron !== null)) return locked;
  throw notFound(route === 'default' ? WORKFLOW_NOT_FOUND : SCHEDULE_NOT_FOUND);
}

/**
 * The row's write after Temporal took the change. Should it fail (PostgreSQL away), Temporal is made to match the
 * row again once it can (scheduleResync.ts), as after a Temporal call that got no answer.
 */
async function writeAfterTemporal<T>(deps: DetailServiceDeps, s: ScheduleRow, log: FastifyBaseLogger, write: () => Promise<T>): Promise<T> {
  try {
    return await write();
  } catch (err) {
    resyncScheduleLater(deps, s.temporal_id, log);
    throw err;
  }
}

/**
 * Temporal has no Schedule for the row being changed: its workflow is being deleted (that removes the Temporal
 * Schedules before the rows), or Temporal lost it. The change is not made: the route's 404, as once the deletion
 * commits (it was a 500, or the 400 `Error updating schedule: schedule not found`), and the Temporal Schedule is made
 * to match its row once this transaction is over (created again while the row is there: scheduleResync.ts).
 */
function scheduleGone(deps: DetailServiceDeps, s: ScheduleRow, route: 'default' | 'schedule', log: FastifyBaseLogger): AppError {
  resyncScheduleLater(deps, s.temporal_id, log);
  return notFound(route === 'default' ? WORKFLOW_NOT_FOUND : SCHEDULE_NOT_FOUND);
}

/**
 * Applies a PATCH to Temporal and then to the row (creating the Temporal Schedule of a default row getting its first
 * cron). The change is checked and computed on the row as read under the change lock, not as read before it: a
 * concurrent PATCH of another field has committed by then, so the timing Temporal gets is the row's as it commits,
 * and Temporal's updates come in commit order (each is sent while its transaction holds the change lock). A row the
 * workflow's deletion removed during the call (its first cron's Temporal Schedule was being created) is the 404, and
 * that Temporal Schedule goes again.
 */
async function changeSchedule(deps: DetailServiceDeps, s: ScheduleRow, route: 'default' | 'schedule', body: SchedulePatch, log: FastifyBaseLogger): Promise<ScheduleRow> {
  const settings = schedulerSettings(deps.config);
  return withTransaction(deps.db, async (c) => {
    const current = await lockedRow(c, s, route);
    const change = await checkedChange(current, body, async () => actionTaken(await temporalClient(deps, UPDATE_FAILED), current, UPDATE_FAILED));
    const next: ScheduleRow = {
      ...current,
      cron: change.cron ?? current.cron,
      at: change.at ?? current.at,
      run_at: change.runAt ?? current.run_at,
      timezone: change.timezone ?? current.timezone,
      jitter_ms: change.jitterMs ?? current.jitter_ms,
      input: change.input !== undefined ? change.input : current.input,
    };
    if (next.type === 'cron' && next.cron === null) {
      if (!(await updateScheduleRow(c, current.id, change))) throw notFound(route === 'default' ? WORKFLOW_NOT_FOUND : SCHEDULE_NOT_FOUND);
      return next; // no schedule yet: nothing in Temporal
    }
    const client = await temporalClient(deps, UPDATE_FAILED);
    const creating = current.type === 'cron' && current.cron === null;
    try {
      await withinDeadline(client, UPDATE_FAILED, async () => {
        if (!creating) await updateSchedule(client, targetOf(next), timingOf(next));
        else {
          await createSchedule(client, {
            target: targetOf(next),
            timing: timingOf(next),
            paused: !next.enabled,
            taskQueue: deps.config.temporal.taskQueue,
            catchupWindowMs: settings.catchupWindowMs,
          });
        }
      });
    } catch (err) {
      log.warn({ err: { message: (err as Error).message }, schedule: current.temporal_id }, 'updating a schedule failed');
      if (err instanceof ScheduleNotFoundError) throw scheduleGone(deps, current, route, log);
      throw unknownOutcomeResynced(deps, err, [current.temporal_id], log) ?? scheduleError(err, next.type === 'cron' ? next.cron : null, UPDATE_FAILED);
    }
    if (!(await writeAfterTemporal(deps, current, log, () => updateScheduleRow(c, current.id, change)))) {
      // deleted with its workflow during the call: a Temporal Schedule this change created has no row
      if (creating) await withinDeadline(client, UPDATE_FAILED, () => deleteSchedule(client, current.temporal_id)).catch(() => undefined);
      throw scheduleGone(deps, current, route, log);
    }
    return next;
  });
}

async function setPaused(deps: DetailServiceDeps, s: ScheduleRow, route: 'default' | 'schedule', action: 'pause' | 'resume', log: FastifyBaseLogger): Promise<ScheduleRow> {
  const enabled = action === 'resume';
  return withTransaction(deps.db, async (c) => {
    // under the change lock like a PATCH, so the answer shows the row as this change commits it
    const current = await lockedRow(c, s, route);
    // a valid request the workflow's state refuses (it runs only on demand): 409, not 400
    if (current.type === 'cron' && current.cron === null) {
      throw conflict(`Workflow ${current.workflow} has no schedule to ${action}; give it one with PATCH /api/v1/schedules/${current.workflow} {"schedule": "<cron>"}`);
    }
    const what = `Error on ${action}`;
    const client = await temporalClient(deps, what);
    if (enabled) await refuseMissedTime(client, current, what);
    try {
      await withinDeadline(client, what, () => setSchedulePaused(client, current.temporal_id, !enabled, `${action}d through the API`));
    } catch (err) {
      if (err instanceof ScheduleNotFoundError) throw scheduleGone(deps, current, route, log);
      throw unknownOutcomeResynced(deps, err, [current.temporal_id], log) ?? err;
    }
    // deleted with its workflow during the call: the deletion removes its Temporal Schedule too
    if (!(await writeAfterTemporal(deps, current, log, () => updateScheduleRow(c, current.id, { enabled })))) throw scheduleGone(deps, current, route, log);
    return { ...current, enabled };
  });
}

/**
 * Whether Temporal took a one-time schedule's one action: its run started, also when the run has not written `ran_at`
 * yet (no worker has taken it).
 */
async function actionTaken(client: Client, s: ScheduleRow, what: string): Promise<boolean> {
  const state = await withinDeadline(client, what, () => scheduleState(client, s.temporal_id));
  return (state?.actionsTaken ?? 0) > 0;
}

/**
 * A one-time schedule whose time passed while it was paused never runs (Temporal drops a time that passes while its
 * Schedule is paused; a resume does not bring it back): resuming it is a 409 that says how to run it, not a 200
 * `active` for a run that never comes. One whose action was taken (its run may not have written `ran_at` yet) resumes.
 */
async function refuseMissedTime(client: Client, s: ScheduleRow, what: string): Promise<void> {
  if (s.type !== 'one-time' || s.ran_at !== null || (s.run_at as Date).getTime() > Date.now()) return;
  if (await actionTaken(client, s, what)) return;
  throw conflict(`Schedule ${s.id} cannot be resumed: its time ${(s.run_at as Date).toISOString()} passed while it was paused; move it first (PATCH "at")`);
}

/**
 * The change a PATCH of a schedule asks for, checked against the schedule's type and state (409). `fired` asks Temporal
 * whether it took a one-time schedule's action (its run not begun yet: no worker took it): then it ran all the same,
 * and its Temporal Schedule has no action left.
 */
async function checkedChange(s: ScheduleRow, body: SchedulePatch, fired: () => Promise<boolean>): Promise<ScheduleChange> {
  // the cron string's form was checked (refuseScheduleExpression), its values are Temporal's to judge (changeSchedule);
  // the zone is checked here, a `CRON_TZ=` prefix's too, and the cron string and zone the schedule gets when either
  // changes (a new zone can leave a stored string no time: `30 2 25-31 3 SUN` moved to Europe/Berlin). A PATCH without
  // `schedule` keeps the stored one as it is, also one written before the form was checked
  // (docs/scheduler.md#schedule-expressions)
  const timezone = body.timezone ?? (s.type === 'cron' && body.schedule !== undefined ? cronZone(body.schedule) : undefined);
  const cron = s.type === 'cron' && (body.schedule !== undefined || body.timezone !== undefined) ? (body.schedule ?? s.cron) : undefined;
  checkZone(timezone, cron, timezone ?? s.timezone);
  const jitterMs = body.jitter === undefined ? undefined : body.jitter * 1000;
  // The body is valid; what it asks for conflicts with the schedule's type, which no schema of the route can know: 409.
  if (s.type === 'cron') {
    if (body.at !== undefined) throw conflict(`"at" applies to one-time schedules; schedule ${s.id} is a cron schedule`);
    return { cron: body.schedule, timezone, jitterMs, input: body.input };
  }
  if (body.schedule !== undefined || body.jitter !== undefined) {
    throw conflict(`"schedule" and "jitter" apply to cron schedules; schedule ${s.id} is a one-time schedule`);
  }
  if (s.ran_at !== null || s.at === 'now' || (await fired())) throw conflict(`Schedule ${s.id} already ran`);
  if (body.at === undefined && body.timezone === undefined) return { input: body.input };
  const at = body.at ?? (s.at as string);
  const zone = body.timezone ?? s.timezone;
  const parsed = parseRunAt(at, zone, new Date());
  if ('error' in parsed) throw invalidRequest(parsed.error);
  return { at: body.at, runAt: parsed.runAt as Date, timezone: body.timezone, input: body.input };
}

export const scheduleRoutes: FastifyPluginAsync<SchedulerPluginOptions> = async (fastify, { deps }) => {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const settings = schedulerSettings(deps.config);
  const view = (s: ScheduleRow) => scheduleView(deps, s);
  const mustGetSchedule = async (workflow: string, id: string): Promise<ScheduleRow> => {
    const w = await mustGetWorkflow(deps.db, workflow);
    const s = isUuid(id) ? await getSchedule(deps.db, w.name, id) : undefined;
    if (!s) throw notFound(SCHEDULE_NOT_FOUND);
    return s;
  };
  const defaultOf = async (workflow: string): Promise<ScheduleRow> => {
    const w = await mustGetWorkflow(deps.db, workflow);
    return (await getDefaultSchedule(deps.db, w.name)) as ScheduleRow;
  };

  app.get('/schedules', { schema: { tags: ['schedules'], response: { 200: ScheduleList, ...DetailErrors } } }, async () => ({
    schedules: await Promise.all((await listSchedules(deps.db)).map(view)),
  }));

  // --- the workflow's default schedule (the spec's routes) ---

  app.patch(
    '/schedules/:workflow',
    { schema: { tags: ['schedules'], params: ScheduleParams, body: PatchScheduleBody, response: { 200: Schedule, ...DetailErrors, 409: Detail } }, preValidation: refuseScheduleExpression },
    async (request) => {
      const s = await defaultOf(request.params.workflow);
      return view(await changeSchedule(deps, s, 'default', request.body, request.log));
    },
  );

  for (const action of ['pause', 'resume'] as const) {
    app.post(
      `/schedules/:workflow/${action}`,
      { schema: { tags: ['schedules'], params: ScheduleParams, response: { 200: Schedule, ...DetailErrors, 409: Detail } } },
      async (request) => {
        return view(await setPaused(deps, await defaultOf(request.params.workflow), 'default', action, request.log));
      },
    );
  }

  // --- every schedule of a workflow ---

  app.get(
    '/workflows/:name/schedules',
    { schema: { tags: ['schedules'], params: WorkflowParams, response: { 200: ScheduleList, ...DetailErrors } } },
    async (request) => {
      const w = await mustGetWorkflow(deps.db, request.params.name);
      return { schedules: await Promise.all((await listSchedules(deps.db, w.name)).map(view)) };
    },
  );

  app.post(
    '/workflows/:name/schedules',
    { schema: { tags: ['schedules'], params: WorkflowParams, body: CreateScheduleBody, response: { 201: Schedule, ...DetailErrors } }, preValidation: refuseScheduleExpression },
    async (request, reply) => {
      const w = await mustGetWorkflow(deps.db, request.params.name);
      const body = request.body;
      // a cron schedule's zone may come from a `CRON_TZ=` prefix; the form was checked (refuseScheduleExpression), the values are Temporal's to judge
      const timezone = body.type === 'cron' ? scheduleZone(body.timezone, body.schedule, 'UTC') : (body.timezone ?? 'UTC');
      checkZone(timezone, body.type === 'cron' ? body.schedule : undefined);
      let timing: ScheduleTiming;
      if (body.type === 'cron') {
        timing = { type: 'cron', cron: body.schedule as string, timezone, jitterMs: (body.jitter ?? 0) * 1000 };
      } else {
        const parsed = parseRunAt(body.at as string, timezone, new Date());
        if ('error' in parsed) throw invalidRequest(parsed.error);
        timing = { type: 'one-time', runAt: parsed.runAt };
      }
      const id = newId();
      const client = await temporalClient(deps, CREATE_FAILED);
      const row = await withTransaction(deps.db, async (c) => {
        await lockTemporalSchedule(c, extraScheduleIdOf(w.name, id)); // a resync of this id waits for the commit
        const inserted = await insertSchedule(c, {
          id,
          workflow: w.name,
          temporalId: extraScheduleIdOf(w.name, id),
          type: body.type,
          cron: timing.type === 'cron' ? timing.cron : null,
          at: timing.type === 'one-time' ? (body.at as string) : null,
          runAt: timing.type === 'one-time' ? (timing.runAt === 'now' ? new Date() : timing.runAt) : null,
          timezone,
          jitterMs: timing.type === 'cron' ? timing.jitterMs : 0,
          enabled: body.enabled ?? true,
          input: body.input ?? null,
        }).catch((err: unknown) => {
          // its workflow was deleted since it was read (the insert waited for the deletion's lock): as if not found
          throw (err as { code?: string }).code === FOREIGN_KEY_VIOLATION ? notFound(WORKFLOW_NOT_FOUND) : err;
        });
        // created before COMMIT: a Temporal refusal leaves no row behind
        try {
          await withinDeadline(client, CREATE_FAILED, () =>
            createSchedule(client, { target: targetOf(inserted), timing, paused: !inserted.enabled, taskQueue: deps.config.temporal.taskQueue, catchupWindowMs: settings.catchupWindowMs }),
          );
        } catch (err) {
          request.log.warn({ err: { message: (err as Error).message }, workflow: w.name }, 'creating a schedule failed');
          throw unknownOutcomeResynced(deps, err, [inserted.temporal_id], request.log) ?? scheduleError(err, timing.type === 'cron' ? timing.cron : null, CREATE_FAILED);
        }
        return inserted;
      });
      if (timing.type === 'one-time' && timing.runAt === 'now') {
        // after COMMIT, so the run finds the row it links to; if the trigger fails, the schedule goes again
        try {
          await withinDeadline(client, CREATE_FAILED, () => triggerSchedule(client, row.temporal_id));
        } catch (err) {
          request.log.warn({ err: { message: (err as Error).message }, workflow: w.name }, 'triggering a schedule failed');
          await withinDeadline(client, CREATE_FAILED, () => deleteSchedule(client, row.temporal_id)).catch(() => undefined);
          await deleteScheduleRow(deps.db, row.id);
          // Temporal did not answer: the schedule goes from Temporal once it answers (its row is gone)
          throw unknownOutcomeResynced(deps, err, [row.temporal_id], request.log) ?? invalidRequest(`${CREATE_FAILED}: ${(err as Error).message}`);
        }
      }
      return reply.code(201).send(await view(row));
    },
  );

  app.get(
    '/workflows/:name/schedules/:id',
    { schema: { tags: ['schedules'], params: WorkflowScheduleParams, response: { 200: Schedule, ...DetailErrors } } },
    async (request) => view(await mustGetSchedule(request.params.name, request.params.id)),
  );

  app.patch(
    '/workflows/:name/schedules/:id',
    { schema: { tags: ['schedules'], params: WorkflowScheduleParams, body: PatchWorkflowScheduleBody, response: { 200: Schedule, ...DetailErrors, 409: Detail } }, preValidation: refuseScheduleExpression },
    async (request) => {
      const s = await mustGetSchedule(request.params.name, request.params.id);
      return view(await changeSchedule(deps, s, 'schedule', request.body, request.log));
    },
  );

  app.delete(
    '/workflows/:name/schedules/:id',
    { schema: { tags: ['schedules'], params: WorkflowScheduleParams, response: { 200: DeletedSchedule, ...DetailErrors, 409: Detail } } },
    async (request) => {
      const s = await mustGetSchedule(request.params.name, request.params.id);
      const client = await temporalClient(deps, DELETE_FAILED);
      // under the change lock, like a change: a PATCH, pause or resume at the same time comes before (and its Temporal
      // call finds the Schedule) or after (the 404); a second DELETE is the 404
      await withTransaction(deps.db, async (c) => {
        const current = await lockedRow(c, s, 'schedule');
        try {
          await withinDeadline(client, DELETE_FAILED, () => deleteSchedule(client, current.temporal_id));
        } catch (err) {
          throw unknownOutcomeResynced(deps, err, [current.temporal_id], request.log) ?? err;
        }
        await writeAfterTemporal(deps, current, request.log, () => deleteScheduleRow(c, current.id));
      });
      return { id: s.id, workflow: s.workflow, deleted: true };
    },
  );

  for (const action of ['pause', 'resume'] as const) {
    app.post(
      `/workflows/:name/schedules/:id/${action}`,
      { schema: { tags: ['schedules'], params: WorkflowScheduleParams, response: { 200: Schedule, ...DetailErrors, 409: Detail } } },
      async (request) => view(await setPaused(deps, await mustGetSchedule(request.params.name, request.params.id), 'schedule', action, request.log)),
    );
  }
};
