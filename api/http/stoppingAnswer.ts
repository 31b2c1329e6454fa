/**
 * While the service stops (app.close(): in-flight requests finish, idle connections close), a request that still
 * arrives on a busy kept-alive connection or a pipelined one is answered 503 in the service's shape, with Retry-After
 * (api/http/errorHandlers.ts) and `Connection: close`, before any route runs: the client retries elsewhere or once
 * the service is back. Fastify's own answer there (`return503OnClosing`) had a shape of its own.
 */
import type { FastifyInstance } from 'fastify';
import { AppError } from '../../lib/errors';

export function installStoppingAnswer(app: FastifyInstance): void {
  let stopping = false;
  // preClose runs when close() begins, before in-flight requests are waited for
  app.addHook('preClose', (done) => {
    stopping = true;
    done();
  });
  app.addHook('onRequest', async (_request, reply) => {
    if (!stopping) return;
    reply.header('connection', 'close');
    throw new AppError(503, 'SERVICE_UNAVAILABLE', 'The service is stopping; try again in a moment (another replica, or this one once it is back)');
  });
}
