/**
 * X-API-Key authentication for the scheduler, agents and traces services (constant-time compare).
 * A request is authenticated when a scheme the service declares carries its key: the OpenAPI document's `security`
 * alternatives are OR-ed, so a wrong or malformed credential of the other scheme beside a valid one is ignored, and a
 * header of a scheme the service does not declare (`Authorization` on the scheduler and traces) is never read.
 * docs/security.md#either-scheme
 */
import type { FastifyInstance } from 'fastify';
import { keysMatch } from '../../lib/keys';
import { isCorsPreflight } from './cors';

const OPEN_PATHS = new Set(['/health', '/health/live', '/metrics']);

export interface ApiKeyAuthOptions {
  key: string;
  /** The multi-agent service also accepts `Authorization: Bearer <key>`. */
  allowBearer?: boolean;
}

/** The token of an `Authorization: Bearer <token>` header; undefined for any other value. */
function bearerToken(auth: string | undefined): string | undefined {
  if (typeof auth !== 'string' || !auth.toLowerCase().startsWith('bearer ')) return undefined;
  return auth.slice(7).trim();
}

export function installApiKeyAuth(app: FastifyInstance, opts: ApiKeyAuthOptions): void {
  app.addHook('onRequest', async (request, reply) => {
    const path = request.url.split('?')[0] ?? '';
    // CORS preflights carry no credentials by design (@fastify/cors answers them); any other OPTIONS needs the key
    if (OPEN_PATHS.has(path) || isCorsPreflight(request)) return;
    const header = request.headers['x-api-key'];
    const byApiKey = keysMatch(Array.isArray(header) ? header[0] : header, opts.key);
    // both compared whatever the first gave, so the time taken does not say which one matched
    const byBearer = opts.allowBearer === true && keysMatch(bearerToken(request.headers.authorization), opts.key);
    if (!byApiKey && !byBearer) {
      return reply.code(401).header('www-authenticate', 'ApiKey').send({ detail: 'Invalid API key' });
    }
  });
}
