/** lib/http/fetchFailure.ts over real sockets: the reason undici hides behind "fetch failed". */
import net from 'node:net';
import { fetchFailure } from '../../lib/http/fetchFailure';

async function failureOf(url: string, init: RequestInit = {}): Promise<{ reason: string; code?: string }> {
  try {
    await fetch(url, init);
  } catch (err) {
    expect((err as Error).message).not.toBe(''); // undici's own: "fetch failed"
    return fetchFailure(err);
  }
  throw new Error('the request did not fail');
}

test('refused, reset, closed mid-answer, timed out: each named, with its code; never the URL', async () => {
  const closed = net.createServer();
  await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
  const port = (closed.address() as net.AddressInfo).port;
  await new Promise((r) => closed.close(r));
  expect(await failureOf(`http://127.0.0.1:${port}/x?key=secret`)).toEqual({ reason: 'connection refused (ECONNREFUSED)', code: 'ECONNREFUSED' });

  const rude = net.createServer((s) => s.once('data', () => s.resetAndDestroy()));
  const half = net.createServer((s) =>
    s.once('data', () => {
      s.write('HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\npartial');
      setTimeout(() => s.destroy(), 50);
    }),
  );
  const silent = net.createServer(() => undefined);
  for (const s of [rude, half, silent]) await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const url = (s: net.Server) => `http://127.0.0.1:${(s.address() as net.AddressInfo).port}/x?key=secret`;
  try {
    const reset = await failureOf(url(rude));
    expect(['connection reset (ECONNRESET)', 'connection closed before the answer was complete (UND_ERR_SOCKET)']).toContain(reset.reason);
    // the answer's head arrived, its body did not: the failure comes from reading it
    const res = await fetch(url(half));
    const midBody = await res.text().then(
      () => undefined,
      (err: unknown) => fetchFailure(err),
    );
    expect(midBody?.reason).toMatch(/\((UND_ERR_SOCKET|ECONNRESET)\)$/);
    expect(await failureOf(url(silent), { signal: AbortSignal.timeout(200) })).toEqual({ reason: 'timed out' });
    for (const f of [reset, midBody]) expect(JSON.stringify(f)).not.toContain('secret');
  } finally {
    for (const s of [rude, half, silent]) s.close();
  }
});

test('a port fetch refuses to use (the Fetch standard\'s "bad ports") is said so, not "fetch failed"', async () => {
  // undici refuses port 6000 (X11) before any connection: nothing needs to listen there
  const failure = await failureOf('http://127.0.0.1:6000/x?key=secret');
  expect(failure.reason).toMatch(/^the port is one fetch never connects to \(a "bad port" of the Fetch standard/);
  expect(failure.reason).not.toContain('secret');
});
