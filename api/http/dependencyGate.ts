/**
 * Requests that need PostgreSQL answer 503 at once while it is known down (lib/runtime/dependencies.ts), before they
 * take a pooled connection. A refused connection fails fast by itself; this is for a server that takes connections
 * and does not answer (a frozen host, a partition, kill -STOP), where each request used to wait the pool's 10 s
 * connect timeout, or hang until the server came back when it got an idle connection and sent its query.
 *
 * Each such request also runs as a `DatabaseRequest` (lib/db/releasedWhenDown.ts): one already waiting on PostgreSQL
 * when it is called down is released with a 503 then, in the same shape (a write whose statement the server may still
 * apply is told that its outcome is unknown). Only the API's requests are turned away or released, never the pool: the
 * worker's activities (on a pool of their own, also in `armada start`) wait for the server as in any outage. What stays
 * served: /health, /metrics, the OpenAPI documents and the web board's files.
 */
import { AsyncResource } from 'node:async_hooks';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { POSTGRES_NOT_ANSWERING, runInDatabaseRequest } from '../../lib/db/releasedWhenDown';
import { AppError } from '../../lib/errors';
import type { DependencyState } from '../../lib/runtime/dependencies';

const SERVED_WITHOUT_DATABASE = /^\/api(\/v1)?\/openapi\.(json|yaml)$/;

/** Whether a request path needs PostgreSQL: the API (`/api…`) and the streams (`/ws…`), not documents or files. */
export function needsDatabase(path: string): boolean {
  if (SERVED_WITHOUT_DATABASE.test(path)) return false;
  return path === '/api' || path.startsWith('/api/') || path === '/ws' || path.startsWith('/ws/');
}

const READ_ONLY_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

export function installDependencyGate(app: FastifyInstance, dependencies: DependencyState): void {
  // the request's async context, entered again after the body is read: the body's 'end' event, from which Fastify runs
  // preValidation, the preHandlers and the handler, comes from the socket's context, not the request's
  const contexts = new WeakMap<FastifyRequest, AsyncResource>();
  app.addHook('onRequest', (request, reply, done) => {
    if (!needsDatabase(request.url.split('?')[0] ?? '')) return done();
    if (dependencies.isDown('postgres')) return done(new AppError(503, 'SERVICE_UNAVAILABLE', POSTGRES_NOT_ANSWERING)); // Retry-After: errorHandlers.ts
    const answered = () => reply.sent || reply.raw.headersSent;
    runInDatabaseRequest({ answered, readOnly: READ_ONLY_METHODS.has(request.method) }, () => {
      const context = new AsyncResource('armada-database-request');
      contexts.set(request, context);
      context.runInAsyncScope(done);
    });
  });
  app.addHook('preValidation', (request, _reply, done) => {
    const context = contexts.get(request);
    if (context) context.runInAsyncScope(done);
    else done();
  });
}
