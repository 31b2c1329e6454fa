/**
 * A secret Armada sends to an outside service (a scheduler source's API key, a repository's credentials) can come
 * back in what that service answers: a platform whose error names the key it refused, a git remote whose message
 * quotes the `Authorization` header. Such text reaches API answers, execution logs and the logs, so the secret is
 * taken out of it first, in every form it travels in (docs/security.md, "Secrets echoed by outside services").
 */

import { redactUrlCredentials } from './urlCredentials';

/** Shorter secrets are left alone: replacing them would take letters out of ordinary words (and they guard nothing). */
export const MIN_REDACTED_SECRET_CHARS = 6;

/** The forms in which `secret` may come back: as sent, escaped in a JSON string, URL-encoded, base64 (and base64url). */
export function secretForms(secret: string): string[] {
  if (secret.length < MIN_REDACTED_SECRET_CHARS) return [];
  const base64 = Buffer.from(secret, 'utf8').toString('base64');
  const forms = [secret, JSON.stringify(secret).slice(1, -1), encodeURIComponent(secret), base64, base64.replace(/=+$/, ''), Buffer.from(secret, 'utf8').toString('base64url')];
  // longest first, so that a form holding another is replaced whole
  return [...new Set(forms)].filter((f) => f.length >= MIN_REDACTED_SECRET_CHARS).sort((a, b) => b.length - a.length);
}

/** `text` with every form of each of `secrets` replaced by `replacement`; the same string when none is in it. */
export function redactSecrets(text: string, secrets: readonly (string | null | undefined)[], replacement = '[redacted]'): string {
  // the forms of all of them longest first: one may hold another (the Basic header's `user:` holds the user's base64)
  const forms = secrets.flatMap((s) => (s ? secretForms(s) : [])).sort((a, b) => b.length - a.length);
  let out = text;
  for (const form of forms) if (out.includes(form)) out = out.split(form).join(replacement);
  return out;
}

/** Arguments whose next argument (or `=value`) is a key: Armada's own (`--api-key`), and the usual spellings elsewhere. */
const KEY_FLAGS = new Set(['--api-key', '--apikey', '--token', '--access-token', '--password', '--secret']);
const HEADER_FLAGS = new Set(['--header', '-H']);

/** A header argument (`Name: value`) with its value as `***`. */
const maskedHeader = (h: string): string => {
  const i = h.indexOf(':');
  return i > 0 ? `${h.slice(0, i)}: ***` : '***';
};

/**
 * A command line with its secrets as `***`: the value of a key flag (`--api-key ***`, `--api-key=***`), of a header
 * flag (`--header 'Authorization: ***'`) and a URL's password. What is no string is kept as it is.
 */
export function maskSecretArguments(args: readonly unknown[]): unknown[] {
  return args.map((a, i) => {
    if (typeof a !== 'string') return a;
    const before = i > 0 ? args[i - 1] : undefined;
    if (typeof before === 'string' && KEY_FLAGS.has(before)) return '***';
    if (typeof before === 'string' && HEADER_FLAGS.has(before)) return maskedHeader(a);
    const eq = a.indexOf('=');
    if (a.startsWith('-') && eq > 0) {
      const flag = a.slice(0, eq);
      if (KEY_FLAGS.has(flag)) return `${flag}=***`;
      if (HEADER_FLAGS.has(flag)) return `${flag}=${maskedHeader(a.slice(eq + 1))}`;
    }
    return redactUrlCredentials(a);
  });
}

/**
 * Shows this process's command line with its secrets as `***` (maskSecretArguments) from now on: the process title
 * overwrites the memory `ps` and /proc/<pid>/cmdline read, which every user of the host can. Does nothing when the
 * command line holds none.
 */
export function hideSecretArguments(): void {
  const args = process.argv.slice(1);
  const masked = maskSecretArguments(args) as string[];
  if (masked.some((a, i) => a !== args[i])) process.title = ['node', ...masked].join(' ');
}
