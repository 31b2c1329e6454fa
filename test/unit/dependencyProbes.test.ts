/**
 * Dependency probes: a refused connection marks PostgreSQL down at the first probe; a server that accepts but never
 * answers (an overloaded host looks the same) only after several slow probes in a row; an answer marks it up again;
 * one that takes connections and drops them is probed at the interval, not in a loop. Real sockets on loopback: a
 * closed port, a TCP server that accepts and stays silent, one that accepts and drops. Temporal's probe reads from its
 * persistence: a frontend that answers GetSystemInfo (from memory) and not that read is down; a read answered after
 * the probe's deadline is still a sign of life (a gRPC server on loopback, test/support/unansweringTemporal.ts).
 */
import net from 'node:net';
import { createDependencyState, startDependencyProbes } from '../../lib/runtime/dependencies';
import { createLogger } from '../../lib/logger';
import { startUnansweringTemporal } from '../support/unansweringTemporal';

const logger = createLogger('silent');

const until = async (cond: () => boolean, ms: number) => {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`condition not met in ${ms} ms`);
    await new Promise((r) => setTimeout(r, 10));
  }
};

async function closedPort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const { port } = s.address() as net.AddressInfo;
  await new Promise((r) => s.close(r));
  return port;
}

/** A TCP server on loopback that accepts connections and never answers (how a hung or overloaded server looks). */
async function silentServer(): Promise<{ port: number; accepted(): number; close(): Promise<void> }> {
  const sockets: net.Socket[] = [];
  const server = net.createServer((s) => {
    sockets.push(s);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: (server.address() as net.AddressInfo).port,
    accepted: () => sockets.length,
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise((r) => server.close(r));
    },
  };
}

test('a refused connection is down at the first probe', async () => {
  const state = createDependencyState(logger);
  const probes = startDependencyProbes(state, { databaseUrl: `postgres://x:y@127.0.0.1:${await closedPort()}/db`, namespace: 'default', intervalMs: 50, timeoutMs: 500 });
  try {
    await until(() => state.isDown('postgres'), 3000);
  } finally {
    await probes.stop();
  }
});

test('a server that never answers is down only after three slow probes in a row', async () => {
  const silent = await silentServer();
  const state = createDependencyState(logger);
  const probes = startDependencyProbes(state, { databaseUrl: `postgres://x:y@127.0.0.1:${silent.port}/db`, namespace: 'default', intervalMs: 20, timeoutMs: 150 });
  try {
    await until(() => silent.accepted() >= 2, 5000);
    expect(state.isDown('postgres')).toBe(false); // two slow probes are not an outage
    await until(() => state.isDown('postgres'), 5000);
    expect(silent.accepted()).toBeGreaterThanOrEqual(3);
  } finally {
    await probes.stop();
    await silent.close();
  }
});

test('a failure that began before the latest sign of life is stale and does not mark the dependency down', () => {
  const state = createDependencyState(logger);
  const before = Date.now() - 5;
  state.markUp('postgres'); // e.g. the supervisor restarted the server, or a pooled client connected
  state.markDown('postgres', 'refused while it was coming up', before);
  expect(state.isDown('postgres')).toBe(false);
  state.markDown('postgres', 'refused after it was up', Date.now() + 1);
  expect(state.down()).toEqual(['postgres']);
  state.markDown('temporal', 'no observation time: always counts');
  expect(state.down()).toEqual(['postgres', 'temporal']);
});

test('why a dependency is down is said without the credentials of a URL in it (GET /health needs no key)', () => {
  const state = createDependencyState(logger);
  state.markDown('postgres', 'could not connect to postgres://armada:s3cret-pw@db.internal:5432/armada: refused');
  expect(state.downReason('postgres')).toContain('db.internal:5432');
  expect(state.downReason('postgres')).not.toContain('s3cret-pw');
  state.markUp('postgres');
  expect(state.downReason('postgres')).toBeUndefined();
});

test('a probe in flight when the server came back does not mark it down when it fails; the next probe does', async () => {
  const silent = await silentServer();
  const state = createDependencyState(logger);
  const probes = startDependencyProbes(state, { databaseUrl: `postgres://x:y@127.0.0.1:${silent.port}/db`, namespace: 'default', intervalMs: 20, timeoutMs: 300, slowProbesToDown: 1 });
  try {
    await until(() => silent.accepted() >= 1, 5000);
    state.markUp('postgres'); // while the first probe waits for its answer
    await until(() => silent.accepted() >= 2, 5000); // the first probe has failed by now
    expect(state.isDown('postgres')).toBe(false);
    await until(() => state.isDown('postgres'), 5000); // the second one began after the sign of life
  } finally {
    await probes.stop();
    await silent.close();
  }
});

test('a server that takes connections and drops them at once (a proxy before a dead server) is down, and probed once per interval, not in a loop', async () => {
  let accepted = 0;
  const dropper = net.createServer((s) => {
    accepted++;
    s.destroy();
  });
  await new Promise<void>((r) => dropper.listen(0, '127.0.0.1', r));
  const state = createDependencyState(logger);
  const probes = startDependencyProbes(state, { databaseUrl: `postgres://x:y@127.0.0.1:${(dropper.address() as net.AddressInfo).port}/db`, namespace: 'default', intervalMs: 200 });
  try {
    await until(() => state.isDown('postgres'), 3000);
    await new Promise((r) => setTimeout(r, 2000));
  } finally {
    await probes.stop();
    await new Promise((r) => dropper.close(r));
  }
  expect(accepted).toBeLessThan(40); // about one a 200 ms; looking again at each dropped connection made thousands
});

test("a Temporal that answers GetSystemInfo but not a read of its persistence (its SQLite file locked, its disk hung) is down after three probes, and says why", async () => {
  const temporal = await startUnansweringTemporal(); // the frontend answers from memory; DescribeWorkflowExecution never
  const state = createDependencyState(logger);
  const probes = startDependencyProbes(state, { temporalAddress: temporal.address, namespace: 'default', intervalMs: 50, timeoutMs: 200 });
  try {
    await until(() => state.isDown('temporal'), 10_000);
    expect(state.downReason('temporal')).toBe('DescribeWorkflowExecution (a read of its persistence): no answer within 200 ms');
  } finally {
    await probes.stop();
    await temporal.close();
  }
});

test("a Temporal whose persistence answers the probe's read after the probe's deadline (a loaded dev server) is not called down: the late answer is a sign of life", async () => {
  // each read answers NotFound 100 ms after its probe gave up waiting, long before the next probe gives up
  const temporal = await startUnansweringTemporal({ describeNotFoundAfterMs: 400 });
  const state = createDependencyState(logger);
  let answers = 0;
  const markUp = state.markUp.bind(state);
  state.markUp = (name) => {
    if (name === 'temporal') answers++;
    markUp(name);
  };
  const probes = startDependencyProbes(state, { temporalAddress: temporal.address, namespace: 'default', intervalMs: 50, timeoutMs: 300 });
  try {
    await until(() => answers >= 5, 10_000); // every probe missed its deadline by then, and each read was answered
    expect(state.isDown('temporal')).toBe(false);
  } finally {
    await probes.stop();
    await temporal.close();
  }
});
