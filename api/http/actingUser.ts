/**
 * Who is acting (docs/security.md#key-rules). With keys configured the bearer hook (api/http/bearerAuth.ts) has
 * already decided it: a user's key names that user, an admin key may name another with X-User-Email, the service key
 * names the server's local user. In local mode (no keys) the X-User-Email header names it, else the host's git
 * user.email.
 */
import { execFileSync } from 'node:child_process';
import type { FastifyRequest } from 'fastify';
import { NAME_CONTROLS } from './inputPolicy';

declare module 'fastify' {
  interface FastifyRequest {
    /** The acting user the bearer hook decided; unset in local mode. */
    armadaUser?: string;
  }
}

/**
 * The local user (local mode, and the user the service key acts as): git's user.email, in lower case as every other
 * user is (X-User-Email, a configured user's email, an approval's approvers), so it is the approver an approval names
 * in any case. Written with capitals, as many are, it was a 403 "… is not an approver" for an approval naming it.
 */
export function gitUserEmail(): string {
  try {
    const email = execFileSync('git', ['config', '--get', 'user.email'], { encoding: 'utf8', timeout: 5000 }).trim();
    return email.toLowerCase() || 'local@armada';
  } catch {
    return 'local@armada';
  }
}

/**
 * local@domain, without white space or any of NAME_CONTROLS: the acting user is stored (createdBy, approver) and shown
 * as a name; a header's bytes may be Latin-1 C1 controls or UTF-8 for a bidi override (`a\u202e@x`), which `\s` lets
 * through (session 47).
 */
const EMAIL = new RegExp(`^[^\\s@${NAME_CONTROLS}]+@[^\\s@${NAME_CONTROLS}]+$`, 'u');
/** RFC 5321's longest address (a path of 256 octets less its angle brackets). */
const EMAIL_MAX = 254;
const UTF8 = new TextDecoder('utf-8', { fatal: true });

/** A header value as its sender wrote it: Node hands header bytes over as Latin-1; clients send UTF-8. */
function utf8Header(value: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: the test is for bytes above ASCII
  if (!/[^\x00-\x7f]/.test(value)) return value;
  try {
    return UTF8.decode(Buffer.from(value, 'latin1'));
  } catch {
    return value; // not UTF-8: the bytes were Latin-1
  }
}

/**
 * The user the X-User-Email header names (lower-cased), or undefined when it is absent or not an email (longer
 * than an address can be, or not of the form local@domain).
 */
export function headerUser(request: FastifyRequest): string | undefined {
  const header = request.headers['x-user-email'];
  if (typeof header !== 'string' || header.length > EMAIL_MAX * 4 + 64) return undefined;
  const email = utf8Header(header).trim();
  return email.length <= EMAIL_MAX && EMAIL.test(email) ? email.toLowerCase() : undefined;
}

export function actingUser(request: FastifyRequest, localUser: string): string {
  return request.armadaUser ?? headerUser(request) ?? localUser;
}
