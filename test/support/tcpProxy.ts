/**
 * A TCP proxy on loopback in front of a real server (the Temporal dev server), to make it unreachable or slow for a
 * while: `refuse` breaks open connections and closes new ones at once, `hold` keeps every byte a client sends (new and open connections)
 * until the mode goes back to `forward`, which then delivers them in order. `holdAnswers` is the other direction:
 * what a client sends reaches the server, and what the server answers is kept (new and open connections) until the
 * mode goes back to `forward`, which delivers it in order; `refuse` or `reset()` meanwhile cuts the connections with
 * the answers undelivered: a request that reached the server and whose answer was lost. `blackhole` is a hung host or a partition:
 * open connections go silent and new ones are accepted but never reach the server; all of them stay silent (open,
 * nothing forwarded, nothing answered) also after the mode goes back to `forward`, which only new connections see.
 * `silenceOpen` is a middlebox (a NAT or firewall) that dropped the connections open now: they go silent for good, as
 * in `blackhole`, while new ones are forwarded.
 */
import net from 'node:net';

export type ProxyMode = 'forward' | 'refuse' | 'hold' | 'holdAnswers' | 'blackhole';

export interface TcpProxy {
  /** host:port to connect to instead of the target */
  address: string;
  setMode(mode: ProxyMode): void;
  /** Breaks every open connection (as `refuse` does) without changing the mode. */
  reset(): void;
  /** Silences every open connection for good (as `blackhole` does) without changing the mode: new ones still pass. */
  silenceOpen(): void;
  /** The connections open now, black-holed ones included. */
  openConnections(): number;
  close(): Promise<void>;
}

interface Piped {
  client: net.Socket;
  upstream?: net.Socket;
  chunks: Buffer[];
  /** what the server answered while the mode was `holdAnswers`, not yet delivered */
  answers: Buffer[];
  /** black-holed: nothing is forwarded either way, for good */
  silent: boolean;
}

export async function startTcpProxy(target: string, mode: ProxyMode = 'forward'): Promise<TcpProxy> {
  const [host, port] = [target.slice(0, target.lastIndexOf(':')), Number(target.slice(target.lastIndexOf(':') + 1))];
  let current = mode;
  const held: Piped[] = [];
  const sockets = new Set<net.Socket>();
  const clients = new Map<net.Socket, Piped>();
  // each held byte is delivered once: a connection held again later (a second stall) sent its first stall's bytes
  // a second time, which the server took for a broken HTTP/2 stream and closed the connection over
  const heldAnswers: Piped[] = [];
  const flush = () => {
    for (const h of held.splice(0)) for (const c of h.chunks.splice(0)) if (!h.silent) h.upstream?.write(c);
    for (const h of heldAnswers.splice(0)) for (const c of h.answers.splice(0)) if (!h.silent) h.client.write(c);
  };
  const resetAll = () => {
    for (const s of sockets) s.destroy();
  };
  const server = net.createServer((client) => {
    if (current === 'refuse') {
      client.destroy();
      return;
    }
    const entry: Piped = { client, chunks: [], answers: [], silent: current === 'blackhole' };
    sockets.add(client);
    clients.set(client, entry);
    const end = () => {
      client.destroy();
      entry.upstream?.destroy();
      sockets.delete(client);
      if (entry.upstream) sockets.delete(entry.upstream);
      clients.delete(client);
    };
    client.on('close', end);
    client.on('error', end);
    if (entry.silent) {
      client.on('data', () => undefined); // read and dropped: the peer sees its bytes taken and never answered
      return;
    }
    const upstream = net.connect(port, host);
    entry.upstream = upstream;
    sockets.add(upstream);
    client.on('data', (chunk) => {
      if (entry.silent) return;
      if (current === 'hold') {
        if (!held.includes(entry)) held.push(entry);
        entry.chunks.push(chunk);
      } else upstream.write(chunk);
    });
    upstream.on('data', (chunk) => {
      if (entry.silent) return;
      if (current === 'holdAnswers') {
        if (!heldAnswers.includes(entry)) heldAnswers.push(entry);
        entry.answers.push(chunk);
      } else client.write(chunk);
    });
    upstream.on('close', end);
    upstream.on('error', end);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    address: `127.0.0.1:${(server.address() as net.AddressInfo).port}`,
    setMode(m) {
      current = m;
      if (m === 'forward') flush();
      if (m === 'refuse') resetAll(); // open connections break too
      if (m === 'blackhole') for (const e of clients.values()) e.silent = true; // open connections go silent too
    },
    reset: resetAll,
    silenceOpen() {
      for (const e of clients.values()) e.silent = true;
    },
    openConnections: () => clients.size,
    async close() {
      resetAll();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
