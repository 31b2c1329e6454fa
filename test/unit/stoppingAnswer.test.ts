/**
 * While a service stops (app.close(): in-flight requests finish first), a request that still reaches it on a kept-alive
 * connection is answered 503 in the service's own error shape, with Retry-After, and the connection is closed. Fastify's
 * own answer there had a shape of its own (`{"error":"Service Unavailable","message":…,"statusCode":503}`).
 */
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { createBaseApp } from '../../api/http/baseApp';
import { createMetrics } from '../../lib/metrics';
import { logger } from '../support/harness';

for (const style of ['envelope', 'detail'] as const) {
  test(`a request arriving while the ${style} service stops gets its 503 shape with Retry-After`, async () => {
    const app = createBaseApp({ service: style === 'envelope' ? 'task' : 'traces', logger, metrics: createMetrics(), version: '1.0.0', errorStyle: style });
    let release: () => void = () => undefined;
    const held = new Promise<void>((r) => (release = r));
    let entered: () => void = () => undefined;
    const inside = new Promise<void>((r) => (entered = r));
    app.get('/api/slow', async () => {
      entered();
      await held;
      return { done: true };
    });
    app.get('/api/quick', async () => ({ quick: true }));
    await app.listen({ port: 0, host: '127.0.0.1' });
    const port = (app.server.address() as AddressInfo).port;
    // one connection: a slow request in flight, then (once the stop has begun) a second request on the same connection
    const socket = net.connect(port, '127.0.0.1');
    let raw = '';
    socket.on('data', (d: Buffer) => (raw += d.toString('utf8')));
    const ended = new Promise<void>((resolve) => socket.on('close', () => resolve()));
    socket.on('error', () => undefined);
    try {
      socket.write(`GET /api/slow HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n\r\n`);
      await inside;
      const closed = app.close();
      await new Promise((r) => setTimeout(r, 100));
      socket.write(`GET /api/quick HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n\r\n`);
      await new Promise((r) => setTimeout(r, 100));
      release();
      await closed;
      await ended;
    } finally {
      release();
      socket.destroy();
    }
    const answers = raw.split(/(?=HTTP\/1\.1 )/);
    expect(answers).toHaveLength(2);
    expect(answers[0]).toMatch(/^HTTP\/1\.1 200 /);
    const [head, body] = (answers[1] ?? '').split('\r\n\r\n');
    expect(head).toMatch(/^HTTP\/1\.1 503 /);
    expect(head?.toLowerCase()).toMatch(/\r\nretry-after: \d+/);
    expect(head?.toLowerCase()).toMatch(/\r\nconnection: close/);
    const json = JSON.parse(body ?? '');
    if (style === 'envelope') expect(json).toMatchObject({ success: false, error: { code: 'SERVICE_UNAVAILABLE', message: expect.stringMatching(/stopping/) } });
    else expect(json).toEqual({ detail: expect.stringMatching(/stopping/) });
  });
}
