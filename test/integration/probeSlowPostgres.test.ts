/**
 * A slow PostgreSQL is not a frozen one. The probe's deadline is short (1 s), so that a frozen server is called down
 * about 3 s after it stops answering; a loaded one that answers each SELECT 1 after that deadline must still never be
 * called down: a probe that got no answer in time keeps waiting, and its late answer is a sign of life. Before, each
 * such probe was given up at its deadline, and three in a row called a server down that answered every one of them.
 * Real embedded PostgreSQL behind a loopback proxy that delays the answers to SELECT 1.
 */
import net from 'node:net';
import { createDependencyState, startDependencyProbes } from '../../lib/runtime/dependencies';
import { env, logger } from '../support/harness';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A loopback proxy in front of PostgreSQL that delivers what the server sends after a `SELECT 1` `delayMs` late. */
async function slowProxy(databaseUrl: string, delayMs: number): Promise<{ url: string; delayed(): number; close(): Promise<void> }> {
  const target = new URL(databaseUrl);
  let delayed = 0;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(target.port), target.hostname);
    sockets.add(client).add(upstream);
    let slow = false;
    client.on('data', (chunk) => {
      if (chunk.includes('SELECT 1')) slow = true;
      upstream.write(chunk);
    });
    upstream.on('data', (chunk) => {
      if (!slow) {
        client.write(chunk);
        return;
      }
      delayed++;
      setTimeout(() => client.writable && client.write(chunk), delayMs);
    });
    const end = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = new URL(databaseUrl);
  url.port = String((server.address() as net.AddressInfo).port);
  return {
    url: url.toString(),
    delayed: () => delayed,
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise((r) => server.close(r));
    },
  };
}

test('a PostgreSQL that answers every probe 1.3 s late, after its 1 s deadline, is never called down', async () => {
  const proxy = await slowProxy(env('ARMADA_TEST_DATABASE_URL'), 1300);
  const state = createDependencyState(logger);
  const downs: string[] = [];
  let ups = 0;
  const markDown = state.markDown.bind(state);
  state.markDown = (name, reason, at) => {
    downs.push(`${name}: ${reason}`);
    markDown(name, reason, at);
  };
  const markUp = state.markUp.bind(state);
  state.markUp = (name) => {
    ups++;
    markUp(name);
  };
  const probes = startDependencyProbes(state, { databaseUrl: proxy.url, namespace: 'default', timeoutMs: 1000 });
  try {
    await sleep(10_000);
    expect(downs).toEqual([]);
    expect(state.isDown('postgres')).toBe(false);
    expect(proxy.delayed()).toBeGreaterThanOrEqual(3); // the answers were late, and each counted
    expect(ups).toBeGreaterThanOrEqual(3);
  } finally {
    await probes.stop();
    await proxy.close();
  }
});
