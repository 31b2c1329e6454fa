/** The task service's protection, installed before any route plugin: CORS, bearer authentication, rate limits. */
import type { FastifyInstance } from 'fastify';
import { actingUser } from '../http/actingUser';
import { bearerKeys, installBearerAuth } from '../http/bearerAuth';
import { installCors } from '../http/cors';
import { installServedHostCheck } from '../http/servedHosts';
import { installWindowLimit } from '../http/rateLimit';
import type { TaskServiceDeps } from './deps';
import { installBoardNotFoundPage } from './webAssets';

export async function installTaskEdges(app: FastifyInstance, deps: TaskServiceDeps): Promise<void> {
  const version = deps.config.version;
  await installCors(app, deps.config.corsOrigins, 'loopback');
  const keys = bearerKeys(deps.keys.task, deps.config.file.users);
  // without a key, a page whose name was rebound to 127.0.0.1 must not be served (api/http/servedHosts.ts)
  if (keys.length === 0) installServedHostCheck(app, deps.config.corsOrigins);
  // An upgrade refused by a hook (401, 429) never reaches @fastify/websocket, which would otherwise close the raw
  // socket: close it here, or the connection (not tracked by the HTTP server) keeps the app from closing.
  app.addHook('onResponse', async (request) => {
    if (String(request.headers.upgrade ?? '').toLowerCase() === 'websocket') request.raw.socket?.destroy();
  });
  const limits = deps.config.file.rateLimit ?? {};
  // per IP before authentication (so guessing keys is limited too), per user after it (the user is known then)
  if (limits.perMinutePerIp) installWindowLimit(app, { limit: limits.perMinutePerIp, windowMs: 60_000, keyOf: (r) => r.ip, version });
  // public like the board's files: a browser opening an address nothing serves gets the board's not-found screen
  installBoardNotFoundPage(app, deps.config.webDir);
  installBearerAuth(app, { keys, version, serviceUser: deps.localUser });
  if (limits.perHourPerUser) {
    installWindowLimit(app, { limit: limits.perHourPerUser, windowMs: 3_600_000, keyOf: (r) => actingUser(r, deps.localUser), version });
  }
}
