/** The workflow scheduler (B): sources, workflows, schedules, executions under /api/v1. */
import type { DetailServiceDeps } from '../detailServiceDeps';
import { installApiKeyAuth } from '../http/apiKeyAuth';
import { createBaseApp } from '../http/baseApp';
import { installCors } from '../http/cors';
import { setUpMaintenanceScheduleUntilDone } from '../../lib/scheduler/maintenanceSchedule';
import { schedulerSettings } from '../../lib/scheduler/settings';
import { startExecutionReconciler, type ExecutionReconciler } from './executionReconciler';
import { executionRoutes } from './executions';
import { flowRoutes } from './flows';
import { scheduleRoutes } from './schedules';
import { sourceRoutes } from './sources';
import { workflowRoutes } from './workflows';
import { named } from '../http/pluginName';

export async function buildSchedulerApp(deps: DetailServiceDeps) {
  const app = createBaseApp({
    service: 'scheduler',
    logger: deps.logger,
    metrics: deps.metrics,
    version: deps.config.version,
    requestTimeoutMs: deps.config.requestTimeoutMs,
    errorStyle: 'detail',
    dependencies: deps.dependencies,
    healthCheck: async () => {
      await deps.db.query('SELECT 1');
      return { database: 'ok' };
    },
  });
  await installCors(app, deps.config.corsOrigins, 'all');
  installApiKeyAuth(app, { key: deps.keys.scheduler, allowBearer: false });
  await app.register(named(sourceRoutes), { prefix: '/api/v1', deps });
  await app.register(named(flowRoutes), { prefix: '/api/v1', deps });
  await app.register(named(workflowRoutes), { prefix: '/api/v1', deps });
  await app.register(named(scheduleRoutes), { prefix: '/api/v1', deps });
  await app.register(named(executionRoutes), { prefix: '/api/v1', deps });
  // The periodic source health check and retention run on a Temporal schedule; set it up in the background so the
  // API starts (and answers /health) even while Temporal is still coming up. It retries until Temporal answers.
  const setup = new AbortController();
  let reconciler: ExecutionReconciler | undefined;
  app.addHook('onClose', async () => {
    setup.abort();
    await reconciler?.stop();
  });
  // once per process: the second port's app is the same service
  if (!deps.secondListener) app.addHook('onReady', async () => {
    // executions Temporal has no run for (a run request cut short between its row and its start) are failed
    reconciler = startExecutionReconciler(deps);
    const { healthCheckIntervalMs } = schedulerSettings(deps.config);
    void setUpMaintenanceScheduleUntilDone({
      client: () => deps.temporal.client(),
      taskQueue: deps.config.temporal.taskQueue,
      intervalMs: healthCheckIntervalMs,
      logger: deps.logger,
      signal: setup.signal,
    });
  });
  return app;
}
