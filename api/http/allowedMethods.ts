/**
 * Which methods a path is served with, for the 405 + `Allow` answer to a method a known path does not declare
 * (TRACE, QUERY, PROPFIND, a PUT where only GET exists, …). Unknown paths stay 404. Built from the routes an app
 * registered; catch-all routes (the CORS preflight `OPTIONS *`) add their method to `Allow` but do not make a
 * path known.
 */
import type { RegisteredRoute } from './openapi';

interface Matcher {
  method: string;
  pattern: RegExp;
  catchAll: boolean;
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
  // the apps ignore a trailing slash
  return { method: route.method, pattern: new RegExp(`^${body}/?$`), catchAll };
}

/** `allowedMethods(path)`: the methods (routes are read on first use, when all are registered) served at a concrete path, empty when no route but a catch-all matches it. */
export function allowedMethodsOf(routes: () => RegisteredRoute[]): (path: string) => string[] {
  let matchers: Matcher[] | undefined;
  return (path) => {
    matchers ??= routes().map(matcherOf);
    const specific = matchers.filter((m) => !m.catchAll && m.pattern.test(path));
    if (specific.length === 0) return [];
    const methods = new Set(specific.map((m) => m.method));
    if (methods.has('GET')) methods.add('HEAD');
    for (const m of matchers) if (m.catchAll) methods.add(m.method);
    return [...methods].sort();
  };
}
