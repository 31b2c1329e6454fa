/**
 * DNS rebinding: in local mode the task service has no key, and the bind rule keeps it on loopback, so only programs
 * of this machine reach it. A web page can still: its site's name, once the page is loaded, is made to resolve to
 * 127.0.0.1 (DNS rebinding), and the page's requests to its own origin (`http://rebind.example:8887/api/…`) then reach
 * the service. They are same-origin for the browser, so CORS never asks, and the WebSocket origin check passed too
 * (the page's Origin is `http://<Host>`, the service's own origin). The page could read and write everything,
 * start attempts (agents running commands in the user's repositories) and, through `/svc/<service>/`, use the other
 * services with the keys the board's forwarding adds (session 51's outside round).
 *
 * What tells such a request apart is its `Host`: the page's name. So in local mode a request whose Host is a name is
 * a 403 in the envelope unless the name is `localhost` or ends in `.localhost` (RFC 6761: they resolve to loopback and
 * no DNS server answers for them), or an origin of it (`http(s)://<Host>`) is one of the configured CORS origins
 * (`cors.origins`, ARMADA_CORS_ORIGINS; `*` allows every host, as it lets every page read the service anyway). An IP
 * address is no name a page can rebind, and a request without Host (HTTP/1.0) or with an empty one names none.
 * `/health` is open to any Host, as it is to any request. With a key (ARMADA_TASK_API_KEY or `users`) a page has no
 * key to send, and the service may be served under any name: nothing is checked.
 */
import { isIP } from 'node:net';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { AppError } from '../../lib/errors';

const OPEN_PATHS = new Set(['/health', '/health/live']);

/** The name of a Host value (`[::1]:8887` → `::1`, `Localhost.:80` → `localhost`), without port and final dot. */
export function hostName(host: string): string {
  const bracketed = /^\[([^\]]*)\]/.exec(host);
  const name = bracketed ? (bracketed[1] as string) : host.replace(/:[0-9]*$/, '');
  return name.toLowerCase().replace(/\.$/, '');
}

/** Whether a request naming `host` may be served in local mode (see the file's comment). */
export function hostMayBeServed(host: string | undefined, configuredOrigins: readonly string[] | undefined): boolean {
  if (host === undefined || host === '') return true;
  const name = hostName(host);
  if (isIP(name) !== 0 || /^v[0-9a-f]+\./i.test(name)) return true; // an IP literal (IPvFuture too)
  if (name === 'localhost' || name.endsWith('.localhost')) return true;
  const configured = configuredOrigins ?? [];
  if (configured.includes('*')) return true;
  const lower = host.toLowerCase();
  return configured.some((origin) => {
    const o = origin.toLowerCase();
    return o === `http://${lower}` || o === `https://${lower}`;
  });
}

/** The 403 for a request whose Host names a host local mode does not serve. */
export function unservedHostError(host: string): AppError {
  const shown = host.slice(0, 200);
  const port = /:([0-9]+)$/.exec(host)?.[1];
  return new AppError(
    403,
    'FORBIDDEN',
    `Host ${shown} is not served: without a key the task service answers requests to localhost or an IP address only, so a web page whose name was made to point at this machine (DNS rebinding) cannot use it; open it at http://127.0.0.1${port ? `:${port}` : ''}/, list the origin in ARMADA_CORS_ORIGINS (cors.origins), or set ARMADA_TASK_API_KEY`,
    { host: 'not served without a key: localhost, *.localhost, an IP address or a configured CORS origin' },
  );
}

/**
 * The check, as an onRequest hook of the task service in local mode (api/task/edges.ts). The input policy's Host
 * rules (one line, a valid value: api/http/inputPolicy.ts) run before it.
 */
export function installServedHostCheck(app: FastifyInstance, configuredOrigins: readonly string[] | undefined): void {
  app.addHook('onRequest', async (request: FastifyRequest) => {
    const host = request.headers.host;
    if (hostMayBeServed(host, configuredOrigins)) return;
    if (OPEN_PATHS.has(request.url.split('?')[0] ?? '')) return;
    throw unservedHostError(host as string);
  });
}
