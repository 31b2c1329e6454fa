/** The workflow scheduler (B): sources, workflows, schedules, executions under /api/v1. */
import type { DetailServiceDeps } from '../detailServiceDeps';
import { installApiKeyAuth } from '../http/apiKeyAuth';
import { createBaseApp } from '../http/baseApp';
import { installCors } from '../http/cors';

export async function buildSchedulerApp(deps: DetailServiceDeps) {
  const app = createBaseApp({
    service: 'scheduler',
    logger: deps.logger,
    metrics: deps.metrics,
    version: deps.config.version,
    errorStyle: 'detail',
    healthCheck: async () => {
      await deps.db.query('SELECT 1');
      return { database: 'ok' };
    },
  });
  await installCors(app, deps.config.corsOrigins, 'all');
  installApiKeyAuth(app, { key: deps.keys.scheduler, allowBearer: false });
  return app;
}
