/** The task service (A): Fastify app with every /api resource plugin. */
import websocket from '@fastify/websocket';
import { createEventListener } from '../../lib/events/listener';
import type { Metrics } from '../../lib/metrics';
import { createBaseApp } from '../http/baseApp';
import type { TaskAppDeps, TaskServiceDeps } from './deps';
import { projectRoutes } from './projects';
import { taskRoutes } from './tasks';
import { createCpuPool } from '../../lib/attempts/cpuPool';
import { attemptRoutes } from './attempts';
import { branchRoutes } from './branches';
import { processRoutes } from './processes';
import { attemptStreamRoutes } from './attemptStreams';

export async function buildTaskApp(base: TaskServiceDeps, metrics: Metrics) {
  const app = createBaseApp({
    service: 'task',
    logger: base.logger,
    metrics,
    version: base.config.version,
    errorStyle: 'envelope',
    healthCheck: async () => {
      await base.db.query('SELECT 1');
      return { database: 'ok' };
    },
  });
  const connectionString = (base.db as unknown as { options: { connectionString: string } }).options.connectionString;
  const events = await createEventListener(connectionString, base.db, base.logger);
  app.addHook('onClose', async () => events.close());
  const deps: TaskAppDeps = { ...base, events, metrics };
  await app.register(websocket, { options: { maxPayload: 64 * 1024 } });
  await app.register(projectRoutes, { prefix: '/api', deps });
  await app.register(taskRoutes, { prefix: '/api', deps });
  const cpu = createCpuPool();
  app.addHook('onClose', async () => cpu.close());
  await app.register(attemptRoutes, { prefix: '/api', deps, cpu });
  await app.register(processRoutes, { prefix: '/api', deps });
  await app.register(branchRoutes, { prefix: '/api', deps });
  await app.register(attemptStreamRoutes, { deps, cpu });
  return app;
}
