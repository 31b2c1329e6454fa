/**
 * The ports Node's fetch (undici) never connects to: the Fetch standard's "bad ports"
 * (https://fetch.spec.whatwg.org/#port-blocking), copied from undici's `lib/web/fetch/constants.js`, which Node bundles
 * but does not export. A request to one fails at once with `fetch failed` (cause `bad port`), whatever listens there.
 * test/unit/badPorts.test.ts checks this list against the running Node's fetch.
 */
export const BAD_PORTS: ReadonlySet<number> = new Set([
  1, 7, 9, 11, 13, 15, 17, 19, 20, 21, 22, 23, 25, 37, 42, 43, 53, 69, 77, 79, 87, 95, 101, 102, 103, 104, 109, 110, 111, 113, 115, 117, 119, 123, 135,
  137, 139, 143, 161, 179, 389, 427, 465, 512, 513, 514, 515, 526, 530, 531, 532, 540, 548, 554, 556, 563, 587, 601, 636, 989, 990, 993, 995, 1719, 1720,
  1723, 2049, 3659, 4045, 4190, 5060, 5061, 6000, 6566, 6665, 6666, 6667, 6668, 6669, 6679, 6697, 10080,
]);

/** The URL's port when fetch would refuse it (an http(s) URL whose explicit port is a bad port), else undefined. */
export function badPortOf(url: URL): number | undefined {
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return undefined;
  const port = url.port === '' ? undefined : Number(url.port);
  return port !== undefined && BAD_PORTS.has(port) ? port : undefined;
}

/** Why nothing is sent to a URL on that port, for a message that goes on to say what to do. */
export function badPortReason(port: number): string {
  return `port ${port} is one fetch never connects to (a "bad port" of the Fetch standard), so nothing can be delivered there`;
}
