/**
 * A TCP proxy on loopback in front of a real server (the Temporal dev server), to make it unreachable or slow for a
 * while: `refuse` breaks open connections and closes new ones at once, `hold` keeps every byte a client sends (new and open connections)
 * until the mode goes back to `forward`, which then delivers them in order.
 */
import net from 'node:net';

export type ProxyMode = 'forward' | 'refuse' | 'hold';

export interface TcpProxy {
  /** host:port to connect to instead of the target */
  address: string;
  setMode(mode: ProxyMode): void;
  close(): Promise<void>;
}

export async function startTcpProxy(target: string, mode: ProxyMode = 'forward'): Promise<TcpProxy> {
  const [host, port] = [target.slice(0, target.lastIndexOf(':')), Number(target.slice(target.lastIndexOf(':') + 1))];
  let current = mode;
  const held: { upstream: net.Socket; chunks: Buffer[] }[] = [];
  const sockets = new Set<net.Socket>();
  const flush = () => {
    for (const h of held.splice(0)) for (const c of h.chunks) h.upstream.write(c);
  };
  const server = net.createServer((client) => {
    if (current === 'refuse') {
      client.destroy();
      return;
    }
    const upstream = net.connect(port, host);
    sockets.add(client);
    sockets.add(upstream);
    const entry = { upstream, chunks: [] as Buffer[] };
    client.on('data', (chunk) => {
      if (current === 'hold') {
        if (!held.includes(entry)) held.push(entry);
        entry.chunks.push(chunk);
      } else upstream.write(chunk);
    });
    upstream.pipe(client);
    const end = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on('close', end);
    upstream.on('close', end);
    client.on('error', end);
    upstream.on('error', end);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    address: `127.0.0.1:${(server.address() as net.AddressInfo).port}`,
    setMode(m) {
      current = m;
      if (m === 'forward') flush();
      if (m === 'refuse') for (const s of sockets) s.destroy(); // open connections break too
    },
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
