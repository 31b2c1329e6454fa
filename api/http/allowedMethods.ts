/**
 * Which methods a path is served with, for the 405 + `Allow` answer to a method a known path does not declare
 * (TRACE, QUERY, PROPFIND, a PUT where only GET exists, …). Unknown paths stay 404. Built from the routes an app
 * registered; catch-all routes (the CORS preflight `OPTIONS *`) add their method to `Allow` but do not make a
 * path known. Where several route templates match a path, the most concrete one is the path's resource, as in the
 * OpenAPI documents ("concrete paths are matched before their templated counterparts"): `/api/attempts/compare`
 * serves POST only, though a GET there reaches `/api/attempts/:id`; its Allow listed GET and DELETE too, methods the
 * document does not give that path.
 */
import type { RegisteredRoute } from './openapi';

interface Matcher {
  method: string;
  pattern: RegExp;
  catchAll: boolean;
  /** Per segment, how concrete it is: `2` a fixed name, `1` a parameter, `0` a wildcard (compared as text). */
  rank: string;
}

function matcherOf(route: RegisteredRoute): Matcher {
  const catchAll = route.url === '*' || route.url === '/*';
  const body = route.url
    .split('/')
    .map((segment) => {
      if (segment === '*') return '.*';
      if (segment.startsWith(':')) return '[^/]+';
      return segment.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    })
    .join('/');
  const rank = route.url
    .split('/')
    .map((segment) => (segment === '*' ? '0' : segment.startsWith(':') ? '1' : '2'))
    .join('');
  return { method: route.method, pattern: new RegExp(`^${body}$`), catchAll, rank };
}

/**
 * `allowedMethods(path)`: the methods (routes are read on first use, when all are registered) served at a concrete
 * path, empty when no route but a catch-all matches it. For `*`, the asterisk-form target of `OPTIONS *`, which asks
 * about the server in general (RFC 9110 §9.3.7): every method some path is served with.
 */
export function allowedMethodsOf(routes: () => RegisteredRoute[]): (path: string) => string[] {
  let matchers: Matcher[] | undefined;
  return (requested) => {
    matchers ??= routes().map(matcherOf);
    if (requested === '*') {
      const all = new Set(matchers.map((m) => m.method));
      if (all.has('GET')) all.add('HEAD');
      return [...all].sort();
    }
    // as the router reads it: the apps ignore a trailing slash (so `/svc/scheduler/` is `/svc/scheduler`, which
    // `/svc/scheduler/*` does not serve; a 405 there listed the very method it refused)
    const path = requested.length > 1 && requested.endsWith('/') ? requested.slice(0, -1) : requested;
    const matching = matchers.filter((m) => !m.catchAll && m.pattern.test(path));
    if (matching.length === 0) return [];
    let concrete = '';
    for (const m of matching) if (m.rank > concrete) concrete = m.rank;
    const methods = new Set(matching.filter((m) => m.rank === concrete).map((m) => m.method));
    if (methods.has('GET')) methods.add('HEAD');
    for (const m of matchers) if (m.catchAll) methods.add(m.method);
    return [...methods].sort();
  };
}
