/**
 * The request target as every hook and route reads it: origin-form (`/api/projects?limit=5`), in one spelling.
 *
 * HTTP/1.1 has four forms of request target (RFC 9112 §3.2). A server MUST accept the absolute-form
 * (`GET http://host/api/projects HTTP/1.1`, what a client sends through a proxy), which Node passes on as it came.
 * Fastify's router found the route of such a target (it skips an `http(s)://authority` itself), but every hook and
 * handler that reads `request.url` got the whole URL: the open `/health` of the key-protected services asked for a
 * key, the dependency gate did not see an `/api` path, a 405 was a 404 naming the whole URL, and the board's `/svc/*`
 * forwarding cut the service's path off the URL by length, so the authority of such a target chose where the
 * forwarded request (with the service's X-API-Key) went: `http://x/svc/scheduler/…` was a 503, and with a service URL
 * without a port (`ARMADA_SCHEDULER_URL=http://scheduler`) `http://1234567.evil.example/svc/scheduler/…` went to
 * `scheduler.evil.example`. The router also decodes percent-encoded letters (`/%61pi/projects` is `/api/projects`),
 * which the hooks did not. So before routing (Fastify's `rewriteUrl`):
 * - an http(s) absolute-form target is read as the origin-form of its path and query; its authority is not used
 *   (Host names the service, and is checked);
 * - percent-encoded unreserved characters of the path (letters, digits, `-._~`) are decoded, the normalisation RFC
 *   3986 §6.2.2.2 says changes nothing (other escapes, `%2F` too, stay as sent);
 * - a fragment (`#…`) is dropped: a client never sends one (RFC 9112 §3.2; RFC 3986 §3.5 keeps it to the client),
 *   and the query parser read `/api/projects#frag` as a query parameter `frag` (a 400 naming it).
 * Other schemes (`ftp://…`) and the asterisk-form (`*`, OPTIONS only: api/http/inputPolicy.ts) are left as they are.
 */

const ABSOLUTE_FORM = /^https?:\/\/[^/?#]*/i;
/** A percent-encoded unreserved character (RFC 3986 §2.3): ALPHA, DIGIT, `-`, `.`, `_`, `~`. */
const ENCODED_UNRESERVED = /%(?:[46][1-9A-Fa-f]|[57][0-9Aa]|3[0-9]|2[Dd]|2[Ee]|5[Ff]|7[Ee])/g;

/** `target` in origin-form, its path's unreserved characters unescaped, without a fragment; `*` and other forms as they are. */
export function originForm(target: string): string {
  let t = target;
  if (!t.startsWith('/')) {
    const authority = ABSOLUTE_FORM.exec(t);
    if (!authority) return t;
    const rest = t.slice(authority[0].length);
    // `http://host` and `http://host?q` name the root (RFC 9112 §3.2.2: an empty path is `/`)
    t = rest.startsWith('/') ? rest : `/${rest}`;
  }
  const hash = t.indexOf('#');
  if (hash >= 0) t = t.slice(0, hash);
  const q = t.indexOf('?');
  const path = q < 0 ? t : t.slice(0, q);
  if (!path.includes('%')) return t;
  const unescaped = path.replace(ENCODED_UNRESERVED, (e) => String.fromCharCode(Number.parseInt(e.slice(1), 16)));
  return q < 0 ? unescaped : `${unescaped}${t.slice(q)}`;
}
