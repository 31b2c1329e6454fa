/**
 * Credentials in URLs are used, never shown (docs/security.md, "Credentials in URLs"). A repository URL may carry
 * them (`https://user:secret@host/…`, `https://<token>@github.com/…`): the clone needs them, so they are kept sealed
 * (lib/projects/repoCredentials.ts), and every response and log shows the URL with the secret replaced by `***`.
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

/** The user name and password of an http(s) URL, decoded as git decodes them. */
export interface UrlCredentials {
  username: string;
  password: string;
}

/** An http(s) URL's scheme and userinfo (up to the last `@` before the host). */
const HTTP_USERINFO = /^(https?:\/\/)([^\s/?#'"<>]*)@/i;

const decode = (s: string): string => {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
};

/**
 * An http(s) URL split into the URL without its userinfo (what git is given) and the credentials it carried: the user
 * name and the password (empty for a token written as the user name alone). Other URLs are returned as they are.
 */
export function splitUrlCredentials(url: string): { url: string; credentials: UrlCredentials | null } {
  const m = HTTP_USERINFO.exec(url);
  if (!m) return { url, credentials: null };
  const [all, scheme, userinfo] = m as unknown as [string, string, string];
  const colon = userinfo.indexOf(':');
  const credentials = colon >= 0 ? { username: decode(userinfo.slice(0, colon)), password: decode(userinfo.slice(colon + 1)) } : { username: decode(userinfo), password: '' };
  return { url: `${scheme}${url.slice(all.length)}`, credentials };
}

/** Whether an http(s) URL carries a secret: credentials that redaction would hide (not the `***` of a shown URL). */
export function holdsUrlSecret(url: string): boolean {
  return HTTP_USERINFO.test(url) && redactUrlCredentials(url) !== url;
}

/**
 * The secret texts of `credentials`, for lib/secretText.ts#redactSecrets: the password and `user:password` (what the
 * Basic header carries, base64), or the user name where it is the token (no password). A user name beside a password
 * is no secret.
 */
export function credentialSecrets(credentials: UrlCredentials | null): string[] {
  if (!credentials) return [];
  const { username, password } = credentials;
  return password ? [`${username}:${password}`, password] : [username, `${username}:`];
}
