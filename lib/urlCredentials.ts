/**
 * Credentials in URLs are used, never shown (docs/security.md, "Credentials in URLs"). A repository URL may carry
 * them (`https://user:secret@host/…`, `https://<token>@github.com/…`): the clone needs them, so they are stored, but
 * every response and log shows the URL with the secret replaced by `***`.
 */

/** A URL's scheme and authority up to the last `@` in it (the userinfo's end; the host follows). */
const USERINFO = /\b([A-Za-z][A-Za-z0-9+.-]*:\/\/)([^\s/?#'"<>]*)@/g;

/** Schemes whose user name alone is a secret: over http(s) a URL with a user and no password carries a token. */
const TOKEN_SCHEMES = /^(https?|ftps?):\/\/$/i;

/**
 * `text` with the credentials of every URL in it replaced: a password by `***` (`https://user:***@host/…`), and a
 * user name without a password by `***` over http(s), where it is a token (`https://***@github.com/…`); an ssh
 * user (`ssh://git@host/…`, `git@host:path`) is no secret and stays. Idempotent; anything else is kept.
 */
export function redactUrlCredentials(text: string): string {
  return text.replace(USERINFO, (_all, scheme: string, userinfo: string) => {
    const colon = userinfo.indexOf(':');
    if (colon >= 0) return `${scheme}${userinfo.slice(0, colon)}:***@`;
    return `${scheme}${TOKEN_SCHEMES.test(scheme) ? '***' : userinfo}@`;
  });
}
