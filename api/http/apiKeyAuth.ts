/** X-API-Key authentication for the scheduler, agents and traces services (constant-time compare). */
import type { FastifyInstance } from 'fastify';
import { keysMatch } from '../../lib/keys';
import { isCorsPreflight } from './cors';

const OPEN_PATHS = new Set(['/health', '/health/live', '/metrics']);

export interface ApiKeyAuthOptions {
  key: string;
  /** The multi-agent service also accepts `Authorization: Bearer <key>`. */
  allowBearer?: boolean;
}

export function installApiKeyAuth(app: FastifyInstance, opts: ApiKeyAuthOptions): void {
  app.addHook('onRequest', async (request, reply) => {
    const path = request.url.split('?')[0] ?? '';
    // CORS preflights carry no credentials by design (@fastify/cors answers them); any other OPTIONS needs the key
    if (OPEN_PATHS.has(path) || isCorsPreflight(request)) return;
    const header = request.headers['x-api-key'];
    let presented = Array.isArray(header) ? header[0] : header;
    if (presented === undefined && opts.allowBearer) {
      const auth = request.headers.authorization;
      if (typeof auth === 'string' && auth.toLowerCase().startsWith('bearer ')) presented = auth.slice(7).trim();
    }
    if (!keysMatch(presented, opts.key)) {
      return reply.code(401).header('www-authenticate', 'ApiKey').send({ detail: 'Invalid API key' });
    }
  });
}
