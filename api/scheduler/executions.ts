/**
 * Execution routes: /api/v1/executions… Rows are projections of workflowRunWorkflow. Stop cancels the Temporal
 * workflow; the running task's activity kills its process group and the workflow records `stopped`. Retry starts a new
 * execution of the same workflow with the same input, linked to the original by `retryOf`.
 */
import type { FastifyPluginAsync } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { conflict, notFound } from '../../lib/errors';
import { isUuid } from '../../lib/ids';
import { getExecution, listExecutionLogs, listExecutions, requestExecutionStops, type ExecutionRow } from '../../lib/db/schedulerExecutions';
import { humanDuration } from '../../lib/scheduler/settings';
import type { SchedulerPluginOptions } from './deps';
import { Detail, DetailErrors, ExecutionDetail, ExecutionList, ExecutionListQuery, ExecutionLogs, ExecutionLogsQuery, ExecutionParams, RetryResult, StopResult } from './schemas';
import { startExecution } from './startExecution';
import { requestCancel } from '../../lib/temporal/workflowHandles';
import { pollUntil } from './stopRuns';
import { temporalClient, withinDeadline } from './temporalAccess';
import { mustGetWorkflow } from './workflows';

export const EXECUTION_NOT_FOUND = 'Execution not found';
const STOP_FAILED = 'Error stopping execution';

const iso = (d: Date | null): string | null => (d ? d.toISOString() : null);
const span = (from: string | Date | null, to: string | Date | null): number | null =>
  from && to ? new Date(to).getTime() - new Date(from).getTime() : null;

export function executionSummary(e: ExecutionRow) {
  return {
    id: e.id,
    workflow: e.workflow,
    status: e.status,
    trigger: e.trigger,
    scheduledAt: iso(e.scheduled_at),
    startedAt: e.started_at.toISOString(),
    completedAt: iso(e.completed_at),
    duration: humanDuration(span(e.started_at, e.completed_at ?? (e.status === 'running' ? new Date() : null))),
    error: e.error,
    scheduleId: e.schedule_id,
    retryOf: e.retry_of,
  };
}

export function executionDetail(e: ExecutionRow) {
  return {
    ...executionSummary(e),
    input: e.input ?? null,
    tasks: e.tasks.map((t) => ({
      name: t.name,
      type: t.type,
      status: t.status,
      startedAt: t.startedAt,
      completedAt: t.completedAt,
      duration: humanDuration(span(t.startedAt, t.completedAt)),
      output: t.output,
      error: t.error ?? null,
    })),
  };
}

export const executionRoutes: FastifyPluginAsync<SchedulerPluginOptions> = async (fastify, { deps }) => {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const mustGet = async (id: string): Promise<ExecutionRow> => {
    const e = isUuid(id) ? await getExecution(deps.db, id) : undefined;
    if (!e) throw notFound(EXECUTION_NOT_FOUND);
    return e;
  };

  app.get(
    '/executions',
    { schema: { tags: ['executions'], querystring: ExecutionListQuery, response: { 200: ExecutionList, ...DetailErrors } } },
    async (request) => {
      const { workflow, status, limit, offset } = request.query;
      return { executions: (await listExecutions(deps.db, { workflow, status }, limit, offset)).map(executionSummary) };
    },
  );

  app.get(
    '/executions/:id',
    { schema: { tags: ['executions'], params: ExecutionParams, response: { 200: ExecutionDetail, ...DetailErrors } } },
    async (request) => executionDetail(await mustGet(request.params.id)),
  );

  app.get(
    '/executions/:id/logs',
    { schema: { tags: ['executions'], params: ExecutionParams, querystring: ExecutionLogsQuery, response: { 200: ExecutionLogs, ...DetailErrors } } },
    async (request) => {
      const e = await mustGet(request.params.id);
      const { offset, limit, level } = request.query;
      const { total, lines } = await listExecutionLogs(deps.db, e.id, { offset, limit, minLevel: level });
      return { executionId: e.id, logs: lines.map((l) => ({ timestamp: l.ts.toISOString(), level: l.level, message: l.message })), total };
    },
  );

  app.post(
    '/executions/:id/retry',
    { schema: { tags: ['executions'], params: ExecutionParams, response: { 201: RetryResult, ...DetailErrors, 409: Detail } } },
    async (request, reply) => {
      const e = await mustGet(request.params.id);
      // a re-run of a run still in progress would race it: stop it first, or wait
      if (e.status === 'running') throw conflict(`Execution ${e.id} is still running`);
      const w = await mustGetWorkflow(deps.db, e.workflow); // an execution's workflow exists (executions go with it)
      // deleted meanwhile with its workflow: this execution is gone too
      const started = await startExecution(deps, w, { input: e.input, retryOf: e.id, goneDetail: EXECUTION_NOT_FOUND }, request.log);
      return reply.code(201).send({ ...started, retryOf: e.id });
    },
  );

  app.post(
    '/executions/:id/stop',
    { schema: { tags: ['executions'], params: ExecutionParams, response: { 200: StopResult, ...DetailErrors, 409: Detail } } },
    async (request) => {
      const e = await mustGet(request.params.id);
      // a valid request that the execution's state refuses: a conflict, not a 400 (docs/scheduler.md)
      if (e.status !== 'running') throw conflict(`Execution ${e.id} is not running (status ${e.status}); only a running execution can be stopped`);
      const client = await temporalClient(deps, STOP_FAILED);
      await withinDeadline(client, STOP_FAILED, () => requestCancel(client, e.temporal_workflow_id)); // an ended run is fine
      // the running task's try reads this every second: it stops at once, not when the cancel reaches it with a heartbeat
      await requestExecutionStops(deps.db, [e.id]);
      // Wait (bounded) for the workflow to record the stop, so the answer says `stopped` in the common case. A row
      // gone meanwhile was deleted with its workflow (which stops its runs): this execution is gone, as for a retry.
      const status = await pollUntil(async () => (await getExecution(deps.db, e.id))?.status ?? 'gone', (s) => s !== 'running');
      if (status === 'gone') throw notFound(EXECUTION_NOT_FOUND);
      return { executionId: e.id, status };
    },
  );
};
