/**
 * ARMADA_HOST (or any bind host) in an address. Services bind to it; clients on this host dial `localAddress`: a
 * wildcard bind (0.0.0.0, ::) is dialled at 127.0.0.1 (a Node server bound to :: takes IPv4 too), and an IPv6
 * literal is bracketed, as a URL or a host:port needs it (`http://:::8887` is no URL).
 */
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
