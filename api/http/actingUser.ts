/** Who is acting: in local mode the X-User-Email header, else the host's git user.email. */
import { execFileSync } from 'node:child_process';
import type { FastifyRequest } from 'fastify';

export function gitUserEmail(): string {
  try {
    const email = execFileSync('git', ['config', '--get', 'user.email'], { encoding: 'utf8', timeout: 5000 }).trim();
    return email || 'local@armada';
  } catch {
    return 'local@armada';
  }
}

const EMAIL = /^[^\s@]+@[^\s@]+$/;

export function actingUser(request: FastifyRequest, localUser: string): string {
  const authenticated = (request as FastifyRequest & { armadaUser?: string }).armadaUser;
  if (authenticated) return authenticated;
  const header = request.headers['x-user-email'];
  if (typeof header === 'string' && EMAIL.test(header.trim())) return header.trim().toLowerCase();
  return localUser;
}
