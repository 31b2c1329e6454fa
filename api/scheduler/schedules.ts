/**
 * Schedule routes: /api/v1/schedules… The cron string and zone are kept in PostgreSQL as written; the Temporal
 * Schedule `schedule:<workflow>` runs them and tells the next run. Pause and resume keep both in step.
 */
import type { FastifyPluginAsync } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { invalidRequest } from '../../lib/errors';
import { withTransaction } from '../../lib/db/pool';
import { listScheduledWorkflows, updateWorkflowSchedule, type WorkflowRow } from '../../lib/db/schedulerWorkflows';
import { cronZone } from '../../lib/scheduler/cron';
import { schedulerSettings } from '../../lib/scheduler/settings';
import { createSchedule, setSchedulePaused, updateScheduleSpec } from '../../lib/scheduler/temporalSchedules';
import type { DetailServiceDeps } from '../detailServiceDeps';
import type { SchedulerPluginOptions } from './deps';
import { DetailErrors, PatchScheduleBody, Schedule, ScheduleList, ScheduleParams } from './schemas';
import { checkZone, mustGetWorkflow, safeNextRun, scheduleError, temporalClient } from './workflows';

async function scheduleView(deps: DetailServiceDeps, w: WorkflowRow) {
  return {
    workflow: w.name,
    schedule: w.schedule,
    timezone: w.timezone,
    jitter: Math.round(w.jitter_ms / 1000),
    enabled: w.enabled,
    nextRun: await safeNextRun(deps, w),
  };
}

export const scheduleRoutes: FastifyPluginAsync<SchedulerPluginOptions> = async (fastify, { deps }) => {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const settings = schedulerSettings(deps.config);
  const mustGet = (name: string): Promise<WorkflowRow> => mustGetWorkflow(deps.db, name);

  app.get('/schedules', { schema: { tags: ['schedules'], response: { 200: ScheduleList, ...DetailErrors } } }, async () => {
    const rows = await listScheduledWorkflows(deps.db);
    return { schedules: await Promise.all(rows.map((w) => scheduleView(deps, w))) };
  });

  app.patch(
    '/schedules/:workflow',
    { schema: { tags: ['schedules'], params: ScheduleParams, body: PatchScheduleBody, response: { 200: Schedule, ...DetailErrors } } },
    async (request) => {
      const w = await mustGet(request.params.workflow);
      const { schedule, jitter } = request.body;
      const timezone = request.body.timezone ?? (schedule !== undefined ? cronZone(schedule) : undefined);
      checkZone(timezone);
      const cron = schedule ?? w.schedule;
      const zone = timezone ?? w.timezone;
      const jitterMs = jitter === undefined ? w.jitter_ms : jitter * 1000;
      const client = cron ? await temporalClient(deps, 'Error updating schedule') : undefined;
      const row = await withTransaction(deps.db, async (c) => {
        const updated = await updateWorkflowSchedule(c, w.name, { schedule, timezone });
        if (jitter !== undefined) await c.query('UPDATE scheduler_workflows SET jitter_ms = $2 WHERE name = $1', [w.name, jitterMs]);
        if (cron && client) {
          try {
            if (w.schedule) await updateScheduleSpec(client, w.name, cron, zone, jitterMs);
            else {
              await createSchedule(client, {
                workflow: w.name,
                cron,
                timezone: zone,
                jitterMs,
                paused: !w.enabled,
                taskQueue: deps.config.temporal.taskQueue,
                catchupWindowMs: settings.catchupWindowMs,
              });
            }
          } catch (err) {
            request.log.warn({ err: { message: (err as Error).message }, workflow: w.name }, 'updating a schedule failed');
            throw scheduleError(err, cron, 'Error updating schedule');
          }
        }
        return updated;
      });
      return scheduleView(deps, { ...(row ?? w), jitter_ms: jitterMs });
    },
  );

  for (const action of ['pause', 'resume'] as const) {
    app.post(
      `/schedules/:workflow/${action}`,
      { schema: { tags: ['schedules'], params: ScheduleParams, response: { 200: Schedule, ...DetailErrors } } },
      async (request) => {
        const w = await mustGet(request.params.workflow);
        if (!w.schedule) throw invalidRequest(`Workflow ${w.name} has no schedule`);
        const client = await temporalClient(deps, `Error on ${action}`);
        const enabled = action === 'resume';
        const row = await withTransaction(deps.db, async (c) => {
          const updated = await updateWorkflowSchedule(c, w.name, { enabled });
          await setSchedulePaused(client, w.name, !enabled, `${action}d through the API`);
          return updated;
        });
        return scheduleView(deps, row ?? { ...w, enabled });
      },
    );
  }
};
