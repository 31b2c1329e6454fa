/**
 * fetch() that follows redirects itself, so the headers that carry a key go to the origin they were given for only.
 * fetch's own following drops just `Authorization` on a redirect to another origin: an `X-API-Key` header (or any
 * `--header`) went along to whatever host the answer named, a presigned download or anyone's server.
 * Like fetch: up to 20 redirects; 303, and 301/302 after a POST, go on as a GET without the body; 307/308 resend the
 * request as it was. A redirect to a URL that is not http(s) is refused (fetch's network error), as is a 21st, and one
 * to a URL with a user name or password (fetch cannot send such a URL).
 * With `otherOrigins: 'refuse'` (the scheduler's calls to flow platforms, tool calls, the scheduler CLI) a redirect to
 * another origin than the first URL's is refused too (RedirectElsewhere), before anything is sent there.
 */

export const MAX_REDIRECTS = 20;

const REDIRECTS = new Set([301, 302, 303, 307, 308]);

/** Thrown for a redirect fetch would refuse to follow; its message says where it pointed (without its query). */
export class RedirectError extends Error {
  override name = 'RedirectError';
}

/** The most of a refused redirect's origin kept in a message (an origin's host has no length limit of its own). */
const MAX_ORIGIN_CHARS = 300;

/**
 * A redirect to another origin, refused (`otherOrigins: 'refuse'`): `status` is the answer's, `origin` where its
 * Location pointed (scheme, host and port: never its user name, password, path or query) and `from` the origin
 * the request was given for.
 */
export class RedirectElsewhere extends RedirectError {
  override name = 'RedirectElsewhere';
  constructor(
    readonly status: number,
    readonly origin: string,
    readonly from: string,
  ) {
    super(`redirected (HTTP ${status}) to another origin, ${origin}, which is not followed`);
  }
}

function withoutHeaders(headers: RequestInit['headers'], names: ReadonlySet<string>): Headers {
  const h = new Headers(headers);
  for (const name of names) h.delete(name);
  return h;
}

/**
 * `fetch(url, init)` following redirects: on a hop to another origin, `keyHeaders` (names, any case) and
 * `Authorization` are no longer sent, or with `otherOrigins: 'refuse'` that hop is not made (RedirectElsewhere).
 * `init.redirect` is ignored (always followed).
 */
export async function fetchFollowingRedirects(
  url: string,
  init: RequestInit,
  keyHeaders: Iterable<string>,
  opts: { otherOrigins?: 'follow' | 'refuse' } = {},
): Promise<Response> {
  const dropped = new Set(['authorization', ...[...keyHeaders].map((n) => n.toLowerCase())]);
  let current = new URL(url);
  let request: RequestInit = { ...init, redirect: 'manual' };
  const origin = current.origin;
  for (let hops = 0; ; hops++) {
    const res = await fetch(current, request);
    const location = REDIRECTS.has(res.status) ? res.headers.get('location') : null;
    if (location === null) return res;
    await res.body?.cancel().catch(() => undefined);
    let next: URL;
    try {
      next = new URL(location, current);
    } catch {
      throw new RedirectError(`redirected (HTTP ${res.status}) to a location that is not a URL`);
    }
    if (next.protocol !== 'http:' && next.protocol !== 'https:') throw new RedirectError(`redirected (HTTP ${res.status}) to a ${next.protocol} URL, which is not followed`);
    if (next.origin !== origin && opts.otherOrigins === 'refuse') {
      const elsewhere = next.origin.length > MAX_ORIGIN_CHARS ? `${next.origin.slice(0, MAX_ORIGIN_CHARS)}…` : next.origin;
      throw new RedirectElsewhere(res.status, elsewhere, origin);
    }
    // fetch refuses such a URL with a TypeError (quoting it, password and all), which callers read as a service that
    // cannot be reached (the scheduler sent such a flow run again); an answer came, and its Location is the problem
    if (next.username !== '' || next.password !== '') throw new RedirectError(`redirected (HTTP ${res.status}) to a URL with a user name or password, which is not followed`);
    if (hops + 1 > MAX_REDIRECTS) throw new RedirectError(`redirected more than ${MAX_REDIRECTS} times`);
    const method = (request.method ?? 'GET').toUpperCase();
    if (res.status === 303 ? method !== 'GET' && method !== 'HEAD' : (res.status === 301 || res.status === 302) && method === 'POST') {
      request = { ...request, method: 'GET', body: undefined, headers: withoutHeaders(request.headers, new Set(['content-type', 'content-length'])) };
    }
    // once away from the origin the keys were given for, they stay off (a hop back does not bring them back)
    if (next.origin !== origin) request = { ...request, headers: withoutHeaders(request.headers, dropped) };
    current = next;
  }
}
