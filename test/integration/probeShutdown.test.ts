/**
 * Stopping the dependency probes while Temporal is unreachable leaves nothing behind. The probe's Temporal connection
 * used the SDK's retry interceptor: a GetSystemInfo that failed during an outage waited in a retry timer, and when
 * `armada start` stopped (Ctrl-C) and closed the connection, that timer fired on the closed channel and threw
 * "Channel has been shut down" from a timer, an uncaught exception: armada exited 70 instead of 0 (seen twice in this
 * session's runs of test/e2e/dependencyFaults.test.ts). Real dev server behind a loopback proxy that refuses.
 */
import { createDependencyState, startDependencyProbes } from '../../lib/runtime/dependencies';
import { env, eventually, logger } from '../support/harness';
import { startTcpProxy } from '../support/tcpProxy';

test('probes stopped during a Temporal outage leave no retry behind to throw on the closed connection', async () => {
  const proxy = await startTcpProxy(env('ARMADA_TEST_TEMPORAL_ADDRESS'));
  const uncaught: unknown[] = [];
  const onUncaught = (err: unknown) => uncaught.push(err);
  process.on('uncaughtException', onUncaught);
  try {
    const state = createDependencyState(logger);
    let answered = false;
    const markUp = state.markUp.bind(state);
    state.markUp = (name) => {
      if (name === 'temporal') answered = true;
      markUp(name);
    };
    const probes = startDependencyProbes(state, { temporalAddress: proxy.address, namespace: 'default', intervalMs: 100, timeoutMs: 1500 });
    await eventually(async () => answered, 15_000, 50);
    proxy.setMode('refuse'); // the connection breaks; every call fails UNAVAILABLE
    await eventually(async () => state.isDown('temporal'), 15_000, 50);
    await new Promise((r) => setTimeout(r, 300)); // a call failed a moment ago
    await probes.stop();
    await new Promise((r) => setTimeout(r, 3000)); // the SDK's retry backoff (up to ~2 s) would have fired by now
    expect(uncaught.map((e) => (e as Error).message)).toEqual([]);
  } finally {
    process.off('uncaughtException', onUncaught);
    await proxy.close();
  }
}, 60_000);
