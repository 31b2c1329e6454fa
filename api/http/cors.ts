/**
 * CORS for every service through @fastify/cors. `cors.origins` (config file) or ARMADA_CORS_ORIGINS (comma-separated)
 * restricts the allowed origins; `*` in the list allows all. Without configuration the scheduler, agents and traces
 * services (X-API-Key protected) allow all origins as the spec says; the task service, which runs without
 * authentication locally and can list directories, allows only loopback origins so an arbitrary web page open in
 * the user's browser cannot read it.
 *
 * Only a real preflight (OPTIONS with Origin and Access-Control-Request-Method) is answered by the plugin. Any other
 * OPTIONS request goes on like a request of any method: authentication, then the not-found handler answers 204 with
 * `Allow` on a served path and 404 elsewhere, in the service's shape (api/http/errorHandlers.ts). The plugin's own
 * answer to it was a text/plain 400 "Invalid Preflight Request", on every path.
 */
import cors from '@fastify/cors';
import type { FastifyInstance, FastifyRequest } from 'fastify';

const LOOPBACK_ORIGIN = /^https?:\/\/(localhost|127\.0\.0\.1|\[::1\])(:\d+)?$/;

export type CorsDefault = 'all' | 'loopback';

export function corsOrigin(configured: string[] | undefined, fallback: CorsDefault): string | string[] | RegExp {
  if (configured && configured.length > 0) return configured.includes('*') ? '*' : configured;
  return fallback === 'all' ? '*' : LOOPBACK_ORIGIN;
}

/**
 * Whether a page of `origin` may open this service's WebSockets. Browsers apply no CORS to a WebSocket: any page may
 * open one and read what it sends, its Origin header the only sign of where it came from. So the handshake is held to
 * what CORS allows (api/http/upgradeRequired.ts), and to the service's own origin (the board, also when served on
 * another address than loopback). Without Origin (a client that is no browser) it is not a browser's question.
 */
export function originMayConnect(origin: string | undefined, host: string | undefined, configured: string[] | undefined, fallback: CorsDefault): boolean {
  if (origin === undefined) return true;
  if (host !== undefined && (origin === `http://${host}` || origin === `https://${host}`)) return true;
  const allowed = corsOrigin(configured, fallback);
  if (allowed === '*') return true;
  return typeof allowed === 'string' ? allowed === origin : Array.isArray(allowed) ? allowed.includes(origin) : allowed.test(origin);
}

/** A CORS preflight: what a browser sends before a cross-origin request it may not send unasked. */
export function isCorsPreflight(request: FastifyRequest): boolean {
  return request.method === 'OPTIONS' && request.headers.origin !== undefined && request.headers['access-control-request-method'] !== undefined;
}

export async function installCors(app: FastifyInstance, configured: string[] | undefined, fallback: CorsDefault): Promise<void> {
  const options = {
    origin: corsOrigin(configured, fallback),
    methods: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'],
    allowedHeaders: ['Authorization', 'Content-Type', 'X-API-Key', 'X-User-Email', 'X-Request-Id', 'Cache-Control', 'Pragma'],
    exposedHeaders: ['X-Request-Id', 'X-Armada-Cache', 'X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset', 'Retry-After'],
    maxAge: 600,
  };
  // an OPTIONS request that is no preflight gets the CORS headers of any request, and goes on to the routes
  const plainOptions = { ...options, preflight: false };
  await app.register(cors, {
    delegator: (request, cb) => cb(null, request.method === 'OPTIONS' && !isCorsPreflight(request) ? plainOptions : options),
  });
}
