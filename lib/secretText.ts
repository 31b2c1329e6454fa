/**
 * A secret Armada sends to an outside service (a scheduler source's API key, a repository's credentials) can come
 * back in what that service answers: a platform whose error names the key it refused, a git remote whose message
 * quotes the `Authorization` header. Such text reaches API answers, execution logs and the logs, so the secret is
 * taken out of it first, in every form it travels in (docs/security.md, "Secrets echoed by outside services").
 */

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
