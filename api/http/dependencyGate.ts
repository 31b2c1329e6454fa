/**
 * Requests that need PostgreSQL answer 503 at once while it is known down (lib/runtime/dependencies.ts), before they
 * take a pooled connection. A refused connection fails fast by itself; this is for a server that takes connections
 * and does not answer (a frozen host, a partition, kill -STOP), where each request used to wait the pool's 10 s
 * connect timeout, or hang until the server came back when it got an idle connection and sent its query.
 *
 * Only the API's requests are turned away, never the pool: in `armada start` the worker shares the pool, and its
 * activities wait for the server as in any outage. A query already sent is left to its answer (the server has it and
 * may still run it), so a 503 never hides a write that then commits. What stays served: /health, /metrics, the
 * OpenAPI documents and the web board's files.
 */
import type { FastifyInstance } from 'fastify';
import { AppError } from '../../lib/errors';
import type { DependencyState } from '../../lib/runtime/dependencies';

const SERVED_WITHOUT_DATABASE = /^\/api(\/v1)?\/openapi\.(json|yaml)$/;

/** Whether a request path needs PostgreSQL: the API (`/api…`) and the streams (`/ws…`), not documents or files. */
export function needsDatabase(path: string): boolean {
  if (SERVED_WITHOUT_DATABASE.test(path)) return false;
  return path === '/api' || path.startsWith('/api/') || path === '/ws' || path.startsWith('/ws/');
}

export function installDependencyGate(app: FastifyInstance, dependencies: DependencyState): void {
  app.addHook('onRequest', async (request) => {
    if (!dependencies.isDown('postgres')) return;
    if (!needsDatabase(request.url.split('?')[0] ?? '')) return;
    throw new AppError(503, 'SERVICE_UNAVAILABLE', 'The database (PostgreSQL) is not answering; try again'); // Retry-After: errorHandlers.ts
  });
}
