/**
 * Closing the API's Temporal client while one of its calls waits to retry leaves nothing behind. The client retries
 * UNAVAILABLE a few times (lib/temporal/client.ts); a retry's timer that fired after close() started its call on the
 * closed channel and threw "Channel has been shut down" from the timer: an uncaught exception, so `armada start` or
 * `armada api` exited 70 at Ctrl-C during a Temporal outage (as the dependency probe's own connection did before
 * ec1ef0a). Real dev server behind a loopback proxy that refuses.
 */
import { createTemporalHandle } from '../../lib/temporal/client';
import { env } from '../support/harness';
import { startTcpProxy } from '../support/tcpProxy';

test('close() during a call that waits to retry: no uncaught exception, and the call ends', async () => {
  const proxy = await startTcpProxy(env('ARMADA_TEST_TEMPORAL_ADDRESS'));
  const uncaught: unknown[] = [];
  const onUncaught = (err: unknown) => uncaught.push(err);
  process.on('uncaughtException', onUncaught);
  try {
    const handle = createTemporalHandle(proxy.address, 'default');
    const client = await handle.client();
    await client.workflowService.getSystemInfo({}); // connected
    proxy.setMode('refuse'); // the connection breaks; every call fails UNAVAILABLE and is retried after a backoff
    const call = client.workflowService.getSystemInfo({}).then(
      () => 'answered',
      (err: Error) => `failed: ${err.message}`,
    );
    await new Promise((r) => setTimeout(r, 250)); // the first try failed; a retry waits in its timer
    await handle.close();
    let timer: NodeJS.Timeout | undefined;
    const outcome = await Promise.race([call, new Promise((r) => (timer = setTimeout(() => r('still waiting'), 10_000)))]);
    clearTimeout(timer);
    await new Promise((r) => setTimeout(r, 2500)); // every retry timer (≤ ~1 s in all) has fired by now
    expect(uncaught.map((e) => (e as Error).message)).toEqual([]);
    expect(outcome).toMatch(/^failed: /);
  } finally {
    process.off('uncaughtException', onUncaught);
    await proxy.close();
  }
}, 60_000);
