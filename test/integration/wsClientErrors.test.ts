/**
 * A WebSocket client's protocol mistakes (a message over the 64 KiB limit, a text frame that is not UTF-8) close its
 * socket with the code RFC 6455 gives them (1009, 1007) and are logged as a client's mistake (info, no stack), like an
 * HTTP 4xx: @fastify/websocket's default logged each as an error with its stack trace, so any client could fill the
 * error log (and page whoever watches it).
 */
import WebSocket from 'ws';
import { createLogger } from '../../lib/logger';
import { startTestStack, type TestStack } from '../support/harness';

const lines: string[] = [];
let stack: TestStack;
let base: string;

beforeAll(async () => {
  const logger = createLogger('trace', 'armada', { write: (line: string) => void lines.push(line) });
  stack = await startTestStack({ services: ['task'], logger });
  base = (await stack.app('task').listen({ port: 0, host: '127.0.0.1' })).replace(/^http/, 'ws');
});
afterAll(async () => {
  await stack?.close();
});

/** Opens /ws, lets `misbehave` send something, and resolves with the close code the server gave. */
const closeCodeAfter = (misbehave: (ws: WebSocket) => void) =>
  new Promise<number | 'still open'>((resolve, reject) => {
    const ws = new WebSocket(`${base}/ws`);
    const timer = setTimeout(() => {
      ws.terminate();
      resolve('still open');
    }, 20_000);
    ws.on('open', () => misbehave(ws));
    ws.on('close', (code) => {
      clearTimeout(timer);
      resolve(code);
    });
    ws.on('error', (err) => {
      // the client's own library may see the server's close first as an error; the close code still follows
      if (!/WS_ERR|Invalid WebSocket frame|payload/i.test(err.message)) reject(err);
    });
  });

const logged = () => lines.map((l) => JSON.parse(l) as { level: number; msg?: string; err?: { stack?: string; code?: string }; code?: string });

test('a message over 64 KiB and a text frame that is not UTF-8 close the socket with 1009 and 1007, logged at info without a stack', async () => {
  expect(await closeCodeAfter((ws) => ws.send('x'.repeat(70 * 1024)))).toBe(1009);
  // a masked text frame (FIN, opcode 1) of two bytes that are no UTF-8: 0xed 0xa0 (the start of a lone surrogate)
  expect(await closeCodeAfter((ws) => (ws as unknown as { _socket: { write(b: Buffer): void } })._socket.write(Buffer.from([0x81, 0x82, 0, 0, 0, 0, 0xed, 0xa0])))).toBe(1007);
  // the server logs after it closed: poll for both lines
  const deadline = Date.now() + 20_000;
  while (Date.now() < deadline && logged().filter((l) => l.msg === 'websocket closed: the client broke the protocol').length < 2) await new Promise((r) => setTimeout(r, 100));
  const entries = logged();
  expect(entries.filter((l) => l.level >= 50 && String(l.err?.code ?? l.code).startsWith('WS_ERR'))).toEqual([]);
  const mistakes = entries.filter((l) => l.msg === 'websocket closed: the client broke the protocol');
  expect(mistakes.map((l) => [l.level, l.code, l.err?.stack])).toEqual([
    [30, 'WS_ERR_UNSUPPORTED_MESSAGE_LENGTH', undefined],
    [30, 'WS_ERR_INVALID_UTF8', undefined],
  ]);
}, 60_000);

test('the socket still works for a client that keeps to the protocol', async () => {
  const ws = new WebSocket(`${base}/ws`);
  const reply = await new Promise<string>((resolve, reject) => {
    ws.on('open', () => ws.send(JSON.stringify({ type: 'ping' })));
    ws.on('message', (d) => resolve(String(d)));
    ws.on('error', reject);
  });
  ws.close();
  expect(JSON.parse(reply)).toMatchObject({ type: 'pong' });
});
