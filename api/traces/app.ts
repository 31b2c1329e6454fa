/** The message trace service (D): traces, filters and analytics under /api/v1. */
import type { DetailServiceDeps } from '../detailServiceDeps';
import { installApiKeyAuth } from '../http/apiKeyAuth';
import { createBaseApp } from '../http/baseApp';
import { traceRoutes } from './traces';
import { installCors } from '../http/cors';
import { named } from '../http/pluginName';

export async function buildTracesApp(deps: DetailServiceDeps) {
  const app = createBaseApp({
    service: 'traces',
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
  installApiKeyAuth(app, { key: deps.keys.traces, allowBearer: false });
  await app.register(named(traceRoutes), { prefix: '/api/v1', deps });
  return app;
}
