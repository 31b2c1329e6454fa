/**
 * `/svc/scheduler/*`, `/svc/agents/*`, `/svc/traces/*`: the board's way to the other services. The task service
 * forwards the request (method, path, query, JSON body) to the service's URL (config.serviceUrls) with that
 * service's X-API-Key, and answers with its status and body (`{detail}` errors included). The browser thus needs only
 * the task service's key (bearer, checked by the app-level hook like any route) and never sees the others' keys.
 * Hidden from the OpenAPI document: the proxied services document themselves.
 */
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { AppError, validationError } from '../../lib/errors';
import type { TaskPluginOptions } from './deps';

export const PROXIED_SERVICES = ['scheduler', 'agents', 'traces'] as const;
type Proxied = (typeof PROXIED_SERVICES)[number];

const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;
const TIMEOUT_MS = 30_000;
/**
 * Response headers worth passing on; hop-by-hop and CORS headers are the task service's own business. `allow` goes
 * with the service's 405 (RFC 9110 §15.5.6: a 405 MUST carry it; through the forwarding it had none until session 48).
 */
const PASSED_HEADERS = ['content-type', 'retry-after', 'x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset', 'location', 'allow'];

/** Escapes that could spell a dot segment: `%2e` (`.`), `%2f` (`/`), `%5c` (`\\`), and `%25` (`%`) of a twice-encoded one. */
const DOT_ESCAPES = /%(2[eEfF5]|5[cC])/g;

/**
 * Whether a forwarded path holds a dot segment (`.` or `..`) in any spelling: as it is, percent-encoded once or more
 * (`%2e%2e`, `%2E.`, `%252e%252e`), or next to an encoded slash or backslash (`..%2f`, `..%5c`). `new URL` resolves
 * a literal or once-encoded one before the call (`/svc/scheduler/%2e%2e/…` called the path above the service's base),
 * and the service's router or anything in front of it may decode the rest once more; none is a path of the service.
 */
export function holdsDotSegment(path: string): boolean {
  let p = path;
  for (let i = 0; i < 8; i++) {
    if (p.split(/[/\\]/).some((segment) => segment === '.' || segment === '..')) return true;
    const decoded = p.replace(DOT_ESCAPES, (e) => String.fromCharCode(Number.parseInt(e.slice(1), 16)));
    if (decoded === p) return false;
    p = decoded;
  }
  return true;
}

export const serviceProxyRoutes: FastifyPluginAsync<TaskPluginOptions> = async (app, { deps }) => {
  const forward = (service: Proxied) => async (request: FastifyRequest, reply: FastifyReply) => {
    const url = request.raw.url ?? request.url;
    const rest = url.slice(`/svc/${service}`.length) || '/';
    const restPath = rest.split('?')[0] ?? '';
    if (holdsDotSegment(restPath)) {
      throw validationError(
        `Request path is invalid: ${url.split('?')[0]} holds a dot segment ("." or "..", however encoded); /svc/${service}/ forwards the ${service} service's own paths, written without dot segments`,
        { path: 'holds a dot segment' },
      );
    }
    // only ever the service itself: the key goes with the request (api/http/requestTarget.ts tells how a target once
    // led elsewhere); a URL that names another origin is no path of the service
    const base = deps.config.serviceUrls[service];
    const target = `${base}${rest}`;
    if (!url.startsWith(`/svc/${service}/`) || !URL.canParse(target) || new URL(target).origin !== new URL(base).origin) {
      throw new AppError(404, 'NOT_FOUND', `Route ${request.method} ${url.split('?')[0]} not found`);
    }
    const headers: Record<string, string> = { 'x-api-key': deps.keys[service], accept: 'application/json', 'x-request-id': request.id };
    const hasBody = request.body !== undefined && request.method !== 'GET' && request.method !== 'DELETE';
    if (hasBody) headers['content-type'] = 'application/json';
    let res: Response;
    try {
      res = await fetch(target, {
        method: request.method,
        headers,
        body: hasBody ? JSON.stringify(request.body) : undefined,
        signal: AbortSignal.timeout(TIMEOUT_MS),
        redirect: 'manual',
      });
    } catch (err) {
      request.log.warn({ service, err: { message: (err as Error).message } }, 'proxied service unreachable');
      throw new AppError(503, 'SERVICE_UNAVAILABLE', `The ${service} service is unavailable; try again`);
    }
    const body = Buffer.from(await res.arrayBuffer());
    reply.code(res.status);
    for (const h of PASSED_HEADERS) {
      const v = res.headers.get(h);
      if (v !== null) reply.header(h, v);
    }
    return reply.send(body);
  };
  for (const service of PROXIED_SERVICES) {
    app.route({ method: [...METHODS], url: `/svc/${service}/*`, schema: { hide: true } as object, handler: forward(service) });
  }
};
