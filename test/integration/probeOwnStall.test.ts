/**
 * A stall of the probing process is not PostgreSQL's silence. `armada start` blocks its event loop for seconds (the
 * workflow bundle, a long GC, a starved CPU); a probe sent before such a stall must not count as unanswered when the
 * answer is waiting in its socket at the stall's end. Before, the expired timer ran before the answer was read, and a
 * healthy PostgreSQL was called down (with the API's dependency gate, every request would have answered 503).
 * Real embedded PostgreSQL.
 */
import net from 'node:net';
import { createDependencyState, startDependencyProbes } from '../../lib/runtime/dependencies';
import { env, logger } from '../support/harness';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const STALLS = 3;
const block = (ms: number) => {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    /* this process's event loop is stalled */
  }
};

/**
 * A loopback proxy in front of PostgreSQL that, right after forwarding a probe's `SELECT 1`, blocks this process for
 * `stallMs`: the answer comes back during the stall, and the probe's wait has expired by its end.
 */
async function stallingProxy(databaseUrl: string, stalls: number, stallMs: number): Promise<{ url: string; stalled(): number; close(): Promise<void> }> {
  const target = new URL(databaseUrl);
  let done = 0;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(target.port), target.hostname);
    sockets.add(client).add(upstream);
    client.on('data', (chunk) => {
      upstream.write(chunk);
      if (done < stalls && chunk.includes('SELECT 1')) {
        done++;
        block(stallMs);
      }
    });
    upstream.pipe(client);
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
    stalled: () => done,
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise((r) => server.close(r));
    },
  };
}

test('probes whose answers arrive during 2.5 s stalls of this process never call a healthy PostgreSQL down', async () => {
  const proxy = await stallingProxy(env('ARMADA_TEST_DATABASE_URL'), STALLS, 2500);
  const state = createDependencyState(logger);
  const downs: string[] = [];
  const markDown = state.markDown.bind(state);
  state.markDown = (name, reason, at) => {
    downs.push(`${name}: ${reason}`);
    markDown(name, reason, at);
  };
  // one unanswered probe is enough to call it down here, and 1 s is well inside each stall. Not shorter: a probe of
  // the healthy server between stalls must never wait that long, also on a busy machine (with 150 ms, one did in a CI
  // run, three jest workers on two cores, and called it down: the test measured the machine, not the stall rule)
  const probes = startDependencyProbes(state, { databaseUrl: proxy.url, namespace: 'default', intervalMs: 20, timeoutMs: 1000, slowProbesToDown: 1 });
  try {
    const end = Date.now() + 20_000;
    while (proxy.stalled() < STALLS && Date.now() < end) await sleep(50);
    expect(proxy.stalled()).toBe(STALLS);
    await sleep(300);
    expect(downs).toEqual([]);
    expect(state.isDown('postgres')).toBe(false);
  } finally {
    await probes.stop();
    await proxy.close();
  }
});
