/**
 * A log follower over WebSocket that stops reading stalls its own stream, not the API's memory (api/http/
 * wsTextFrames.ts, sendRoom): the server writes a batch only while less than WS_BACKLOG_BYTES wait for the socket,
 * and a follower behind reads the database by seq when it reads again, so it still gets every line once, in order.
 * Before, every batch was written at once: a paused follower of a chatty agent held the agent's whole output in the
 * API process.
 */
import type net from 'node:net';
import WebSocket from 'ws';
import { buildService } from '../../api/services';
import { WS_BACKLOG_BYTES } from '../../api/http/wsTextFrames';
import { createMetrics } from '../../lib/metrics';
import { agentConfig, api } from '../support/attemptHelpers';
import { eventually, logger, startTestStack, type TestStack } from '../support/harness';

const LINES = 80_000;
// ~16 MB of output in a few seconds: 80,000 lines of 200 characters
const FLOOD = `yes "$(printf 'x%.0s' $(seq 1 200))" | head -n ${LINES}`;

let stack: TestStack;

beforeAll(async () => {
  stack = await startTestStack({ services: ['task'], worker: true, file: agentConfig({ agents: { flood: { command: ['sh', '-c', FLOOD], format: 'text' } } }) });
}, 120_000);
afterAll(async () => {
  await stack?.close();
});

test('a paused WebSocket follower of a 16 MB log: the API never holds more than the backlog and a batch for it; resumed, it gets every line in order', async () => {
  const app = await buildService('task', { db: stack.db, config: stack.config, keys: stack.keys, temporal: stack.temporal, logger, metrics: createMetrics() });
  const sockets = new Set<net.Socket>();
  app.server.on('connection', (s: net.Socket) => sockets.add(s));
  const base = await app.listen({ port: 0, host: '127.0.0.1' });
  try {
    const h = api(stack);
    const p = await h.project();
    const started = await h.start(await h.task(p.id, 'flood'), 'flood');
    const ws = new WebSocket(`${base.replace('http', 'ws')}/ws/execution-processes/${started.processId}/logs/normalized`);
    let received = 0;
    let inOrder = true;
    ws.on('message', (d) => {
      const m = JSON.parse(String(d)) as { seq?: number };
      if (typeof m.seq !== 'number') return;
      if (m.seq !== received + 1) inOrder = false;
      received = m.seq;
    });
    const closed = new Promise((r) => ws.on('close', r));
    await new Promise((r) => ws.on('open', r));
    // the client stops reading: its TCP socket is paused, so the kernel's buffers fill and then the server's
    (ws as unknown as { _socket: net.Socket })._socket.pause();
    let most = 0;
    const sample = setInterval(() => {
      for (const s of sockets) most = Math.max(most, s.writableLength);
    }, 5);
    await h.until(started.attemptId, ['completed', 'failed'], 90_000);
    await new Promise((r) => setTimeout(r, 1000));
    clearInterval(sample);
    // a batch is at most one read of the feed (a few MB of these lines); without the wait it was the whole log
    expect(most).toBeLessThan(WS_BACKLOG_BYTES + 4 * 1024 * 1024);
    (ws as unknown as { _socket: net.Socket })._socket.resume();
    await eventually(async () => received >= LINES || undefined, 120_000, 50);
    expect(inOrder).toBe(true);
    await closed;
  } finally {
    await app.close();
  }
}, 180_000);
