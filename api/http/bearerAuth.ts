/**
 * Bearer authentication of the task service, as an app-level onRequest hook so it covers every route, including
 * WebSocket upgrades and SSE streams registered by any plugin (before or after this one).
 * Keys: ARMADA_TASK_API_KEY (the service key: acts as the server's local user) and the `users` config (each key
 * names its user). The hook decides the acting user (request.armadaUser); X-User-Email may name someone else only
 * with a key marked `admin`. Browsers cannot set headers on WebSocket upgrades or EventSource requests, so routes
 * marked `config: STREAM_ROUTE` (and only those) accept the key as `?access_token=<key>`. Keys are compared in
 * constant time and never logged. docs/security.md#key-rules
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { keysMatch } from '../../lib/keys';
import { headerUser } from './actingUser';
import { isCorsPreflight } from './cors';
import { errorBody } from './envelope';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** A WebSocket or SSE route: a browser cannot send it a header, so it accepts `?access_token=<key>`. */
    acceptsQueryKey?: boolean;
    /** The board's static files (index.html, hashed assets): public, the app asks for the key itself. */
    publicAsset?: boolean;
  }
}

/** Route config of WebSocket and SSE routes: `app.get(path, { config: STREAM_ROUTE, … })`. */
export const STREAM_ROUTE = { acceptsQueryKey: true } as const;

/** Route config of the board's static files (api/task/webAssets.ts): served without a key, they hold no data. */
export const PUBLIC_ASSET_ROUTE = { publicAsset: true } as const;

export interface BearerKey {
  key: string;
  /** The user this key names; undefined for the service key. */
  email?: string;
  /** `users[].admin`: X-User-Email may name another user (a trusted front end acting for its users). */
  admin?: boolean;
}

export interface BearerAuthOptions {
  keys: BearerKey[];
  version: string;
  /** Who the service key (ARMADA_TASK_API_KEY) acts as: the server's local user (git user.email). */
  serviceUser: string;
}

const OPEN_PATHS = new Set(['/health', '/health/live']);

/** The configured keys: the task key and one per configured user. Empty = local mode, no authentication. */
export function bearerKeys(taskKey: string | undefined, users: { email: string; apiKey: string; admin?: boolean }[] | undefined): BearerKey[] {
  const keys: BearerKey[] = [];
  if (taskKey) keys.push({ key: taskKey });
  for (const u of users ?? []) keys.push({ key: u.apiKey, email: u.email.toLowerCase(), admin: u.admin === true });
  return keys;
}

/** Whether the matched route is a WebSocket or SSE route marked STREAM_ROUTE (never decided by headers). */
export function acceptsQueryKey(request: FastifyRequest): boolean {
  return request.routeOptions.config?.acceptsQueryKey === true;
}

/**
 * Removes `access_token` from the request's URL and parsed query once it has been read, so no log line (ours, or a
 * plugin's that prints the URL), no handler and no query validation ever sees the key.
 */
function scrubAccessToken(request: FastifyRequest): void {
  // every request passes here (in local mode too): the URL is rewritten only when the query Fastify parsed (names
  // decoded, so `access%5Ftoken` too) holds the key
  const query = request.query as Record<string, unknown> | undefined;
  if (!query || typeof query !== 'object' || !Object.hasOwn(query, 'access_token')) return;
  delete query.access_token;
  const url = request.raw.url ?? '';
  const q = url.indexOf('?');
  if (q < 0) return;
  const params = new URLSearchParams(url.slice(q + 1));
  params.delete('access_token');
  const rest = params.toString();
  request.raw.url = url.slice(0, q) + (rest ? `?${rest}` : '');
}

function presentedKey(request: FastifyRequest): string | undefined {
  const auth = request.headers.authorization;
  if (typeof auth === 'string') {
    const m = /^Bearer\s+(.+)$/i.exec(auth.trim());
    return m?.[1]?.trim();
  }
  if (acceptsQueryKey(request)) {
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
  if (opts.keys.length === 0) {
    // no key to check, but a client that holds one (the board keeps it across a reconfiguration) may still send
    // `?access_token=`: dropped unread all the same, so no log line shows it and query validation (which refuses
    // undeclared parameters) does not turn it into a 400
    app.addHook('onRequest', async (request) => scrubAccessToken(request));
    return;
  }
  app.addHook('onRequest', async (request, reply) => {
    const path = request.url.split('?')[0] ?? '';
    if (OPEN_PATHS.has(path) || request.routeOptions.config?.publicAsset === true) return;
    // CORS preflights carry no credentials by design; @fastify/cors answers them.
    if (isCorsPreflight(request)) return;
    const presented = presentedKey(request);
    scrubAccessToken(request);
    const match = matchKey(presented, opts.keys);
    if (!match) {
      return reply.code(401).header('www-authenticate', 'Bearer').send(errorBody(opts.version, 'UNAUTHORIZED', 'Authentication required'));
    }
    const keyUser = match.email ?? opts.serviceUser;
    const claimed = headerUser(request);
    if (claimed && claimed !== keyUser.toLowerCase() && !match.admin) {
      return reply.code(403).send(errorBody(opts.version, 'FORBIDDEN', 'X-User-Email may name another user only with an admin key; this key acts as its own user'));
    }
    request.armadaUser = match.admin && claimed ? claimed : keyUser;
  });
}
