/**
 * Who is acting (docs/security.md#key-rules). With keys configured the bearer hook (api/http/bearerAuth.ts) has
 * already decided it: a user's key names that user, an admin key may name another with X-User-Email, the service key
 * names the server's local user. In local mode (no keys) the X-User-Email header names it, else the host's git
 * user.email.
 */
import { execFileSync } from 'node:child_process';
import type { FastifyRequest } from 'fastify';

declare module 'fastify' {
  interface FastifyRequest {
    /** The acting user the bearer hook decided; unset in local mode. */
    armadaUser?: string;
  }
}

export function gitUserEmail(): string {
  try {
    const email = execFileSync('git', ['config', '--get', 'user.email'], { encoding: 'utf8', timeout: 5000 }).trim();
    return email || 'local@armada';
  } catch {
    return 'local@armada';
  }
}

const EMAIL = /^[^\s@]+@[^\s@]+$/;

/** The user the X-User-Email header names (lower-cased), or undefined when it is absent or not an email. */
export function headerUser(request: FastifyRequest): string | undefined {
  const header = request.headers['x-user-email'];
  return typeof header === 'string' && EMAIL.test(header.trim()) ? header.trim().toLowerCase() : undefined;
}

export function actingUser(request: FastifyRequest, localUser: string): string {
  return request.armadaUser ?? headerUser(request) ?? localUser;
}
