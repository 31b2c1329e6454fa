/**
 * Bearer authentication of the task service, as an app-level onRequest hook so it covers every route, including
 * WebSocket upgrades and SSE streams registered by any plugin (before or after this one).
 * Keys: ARMADA_TASK_API_KEY (names no user) and the `users` config (each key names its user → request.armadaUser).
 * Browsers cannot set headers on WebSocket upgrades or EventSource requests, so those (and only those) may send
 * the key as `?access_token=<key>`. Keys are compared in constant time and never logged.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { keysMatch } from '../../lib/keys';
import { errorBody } from './envelope';

export interface BearerKey {
  key: string;
  /** The user this key names; undefined for the service key. */
  email?: string;
}

export interface BearerAuthOptions {
  keys: BearerKey[];
  version: string;
}

const OPEN_PATHS = new Set(['/health']);

/** The configured keys: the task key and one per configured user. Empty = local mode, no authentication. */
export function bearerKeys(taskKey: string | undefined, users: { email: string; apiKey: string }[] | undefined): BearerKey[] {
  const keys: BearerKey[] = [];
  if (taskKey) keys.push({ key: taskKey });
  for (const u of users ?? []) keys.push({ key: u.apiKey, email: u.email.toLowerCase() });
  return keys;
}

/** WebSocket upgrades and Server-Sent-Event streams: the requests a browser cannot add an Authorization header to. */
export function isStreamRequest(request: FastifyRequest): boolean {
  if (String(request.headers.upgrade ?? '').toLowerCase() === 'websocket') return true;
  const path = request.url.split('?')[0] ?? '';
  if (path.startsWith('/api/events/')) return true;
  return String(request.headers.accept ?? '').includes('text/event-stream');
}

/**
 * Removes `access_token` from the request's URL and parsed query once it has been read, so no log line (ours, or a
 * plugin's that prints the URL), no handler and no query validation ever sees the key.
 */
function scrubAccessToken(request: FastifyRequest): void {
  const url = request.raw.url ?? '';
  const q = url.indexOf('?');
  if (q < 0) return;
  const params = new URLSearchParams(url.slice(q + 1));
  if (!params.has('access_token')) return;
  params.delete('access_token');
  const rest = params.toString();
  request.raw.url = url.slice(0, q) + (rest ? `?${rest}` : '');
  const query = request.query as Record<string, unknown> | undefined;
  if (query && typeof query === 'object') delete query.access_token;
}

function presentedKey(request: FastifyRequest): string | undefined {
  const auth = request.headers.authorization;
  if (typeof auth === 'string') {
    const m = /^Bearer\s+(.+)$/i.exec(auth.trim());
    return m?.[1]?.trim();
  }
  if (isStreamRequest(request)) {
    const token = (request.query as Record<string, unknown> | undefined)?.access_token;
    if (typeof token === 'string' && token !== '') return token;
  }
  return undefined;
}

/** Which configured key matches, checking every key so the time taken does not depend on which one matched. */
export function matchKey(presented: string | undefined, keys: BearerKey[]): BearerKey | undefined {
  let found: BearerKey | undefined;
  for (const k of keys) if (keysMatch(presented, k.key) && !found) found = k;
  return found;
}

export function installBearerAuth(app: FastifyInstance, opts: BearerAuthOptions): void {
  if (opts.keys.length === 0) return;
  app.addHook('onRequest', async (request, reply) => {
    const path = request.url.split('?')[0] ?? '';
    if (OPEN_PATHS.has(path)) return;
    // CORS preflights carry no credentials by design; @fastify/cors answers them.
    if (request.method === 'OPTIONS' && request.headers['access-control-request-method']) return;
    const presented = presentedKey(request);
    scrubAccessToken(request);
    const match = matchKey(presented, opts.keys);
    if (!match) {
      return reply.code(401).header('www-authenticate', 'Bearer').send(errorBody(opts.version, 'UNAUTHORIZED', 'Authentication required'));
    }
    if (match.email) (request as FastifyRequest & { armadaUser?: string }).armadaUser = match.email;
  });
}
