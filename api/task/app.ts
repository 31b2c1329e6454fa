/** The task service (A): Fastify app with every /api resource plugin. */
import type { Metrics } from '../../lib/metrics';
import { createBaseApp } from '../http/baseApp';
import type { TaskServiceDeps } from './deps';
import { projectRoutes } from './projects';
import { taskRoutes } from './tasks';

export async function buildTaskApp(deps: TaskServiceDeps, metrics: Metrics) {
  const app = createBaseApp({
    service: 'task',
    logger: deps.logger,
    metrics,
    version: deps.config.version,
    errorStyle: 'envelope',
    healthCheck: async () => {
      await deps.db.query('SELECT 1');
      return { database: 'ok' };
    },
  });
  await app.register(projectRoutes, { prefix: '/api', deps });
  await app.register(taskRoutes, { prefix: '/api', deps });
  return app;
}
