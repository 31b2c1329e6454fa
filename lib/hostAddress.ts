/**
 * ARMADA_HOST (or any bind host) in an address. Services bind to it; clients on this host dial `localAddress`: a
 * wildcard bind (0.0.0.0, ::) is dialled at 127.0.0.1 (a Node server bound to :: takes IPv4 too), and an IPv6
 * literal is bracketed, as a URL or a host:port needs it (`http://:::8887` is no URL). A listener that takes only an
 * IP literal (the Temporal SDK's Prometheus endpoint) gets `bindIp`'s address for a host name such as `localhost`.
 */
import dns from 'node:dns/promises';
import net from 'node:net';

/** `host` trimmed and without the brackets of an IPv6 literal given as `[::1]`. */
function bare(host: string): string {
  return host.trim().replace(/^\[(.*)\]$/, '$1');
}

/** `host` as the host part of a URL or host:port: an IPv6 literal in brackets. */
function urlHost(host: string): string {
  const h = bare(host);
  return net.isIPv6(h) ? `[${h}]` : h;
}

/** The host a client on this host dials for a service bound to `host`, ready for a URL: 0.0.0.0 and :: are 127.0.0.1. */
export function localAddress(host: string): string {
  const h = bare(host);
  if (h === '' || h === '0.0.0.0' || h === '::') return '127.0.0.1';
  return urlHost(h);
}

/** The http URL of a service bound to `host` and `port`, as a client on this host reaches it. */
export function localUrl(host: string, port: number): string {
  return `http://${localAddress(host)}:${port}`;
}

/** `host:port` to listen on (`[::]:9464`): the host as given, an IPv6 literal bracketed. */
export function listenAddress(host: string, port: number): string {
  return `${urlHost(host)}:${port}`;
}

/** `host` could not be resolved to an address to bind to. */
export class HostNotResolved extends Error {
  constructor(host: string, reason: string) {
    super(`ARMADA_HOST=${host} does not resolve to an address on this host (${reason}): set it to an IP address, or to a name this host resolves`);
    this.name = 'HostNotResolved';
  }
}

/**
 * `host` as an IP literal to bind to: a literal as it is (without brackets), a host name resolved to its first address
 * as this host's resolver orders them (`localhost` → 127.0.0.1 or ::1). Throws HostNotResolved for a name it cannot
 * resolve.
 */
export async function bindIp(host: string): Promise<string> {
  const h = bare(host);
  if (net.isIP(h)) return h;
  try {
    return (await dns.lookup(h)).address;
  } catch (err) {
    throw new HostNotResolved(h, (err as NodeJS.ErrnoException).code ?? (err as Error).message);
  }
}
