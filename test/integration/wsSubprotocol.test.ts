/**
 * The task service's WebSockets implement no subprotocol, so a handshake never selects one (RFC 6455 §4.2.2: the
 * server answers with one of the client's protocols only if it supports it). Before, it echoed the first one the
 * client offered (`Sec-WebSocket-Protocol: foo, bar` → `foo`), telling the client it spoke `foo`.
 */
import crypto from 'node:crypto';
import http from 'node:http';
import WebSocket from 'ws';
import { startTestStack, type TestStack } from '../support/harness';

let stack: TestStack;
let base: string;

beforeAll(async () => {
  stack = await startTestStack({ services: ['task'] });
  base = await stack.app('task').listen({ port: 0, host: '127.0.0.1' });
}, 120_000);
afterAll(async () => {
  await stack?.close();
});

/** The status and headers of the answer to an upgrade request offering `protocols`. */
function handshake(path: string, protocols: string): Promise<{ status: number; headers: http.IncomingHttpHeaders }> {
  return new Promise((resolve, reject) => {
    const req = http.request(`${base}${path}`, {
      headers: {
        Connection: 'Upgrade',
        Upgrade: 'websocket',
        'Sec-WebSocket-Version': '13',
        'Sec-WebSocket-Key': crypto.randomBytes(16).toString('base64'),
        'Sec-WebSocket-Protocol': protocols,
      },
    });
    req.on('upgrade', (res, socket) => {
      socket.destroy();
      resolve({ status: res.statusCode ?? 0, headers: res.headers });
    });
    req.on('response', (res) => {
      res.resume();
      resolve({ status: res.statusCode ?? 0, headers: res.headers });
    });
    req.on('error', reject);
    req.end();
  });
}

const SOCKETS = ['/ws', '/ws/events', '/ws/execution-processes', `/ws/execution-processes/${crypto.randomUUID()}/logs/raw`, `/ws/execution-processes/${crypto.randomUUID()}/logs/normalized`, `/ws/projects/${crypto.randomUUID()}/drafts`];

test('no socket selects a subprotocol the client offers', async () => {
  for (const path of SOCKETS) {
    for (const offered of ['foo, bar', 'graphql-ws', 'chat']) {
      const r = await handshake(path, offered);
      expect([path, offered, r.status, r.headers['sec-websocket-protocol']]).toEqual([path, offered, 101, undefined]);
    }
  }
});

test('a client that requires a subprotocol sees the server picked none; one that offers none connects as before', async () => {
  const url = `${base.replace('http', 'ws')}/ws`;
  const refused = await new Promise<string>((resolve) => {
    const ws = new WebSocket(url, ['foo', 'bar']);
    ws.on('open', () => {
      resolve(`open with ${ws.protocol}`);
      ws.close();
    });
    ws.on('error', (err) => resolve(err.message));
  });
  expect(refused).toBe('Server sent no subprotocol');
  const plain = await new Promise<string>((resolve, reject) => {
    const ws = new WebSocket(url);
    ws.on('open', () => {
      resolve(ws.protocol);
      ws.close();
    });
    ws.on('error', reject);
  });
  expect(plain).toBe('');
});

test('the sockets that take no query parameter refuse one they do not declare, the drafts stream as /ws; access_token is the key, not a parameter', async () => {
  const none = ['/ws', '/ws/execution-processes', `/ws/projects/${crypto.randomUUID()}/drafts`];
  for (const path of none) {
    const r = await new Promise<{ status: number; body: string; connection?: string }>((resolve, reject) => {
      // a connection of its own: the server closes one whose upgrade it refused (and says so: Connection: close)
      const req = http.request(`${base}${path}?x=1&after=2`, {
        agent: false,
        headers: { Connection: 'Upgrade', Upgrade: 'websocket', 'Sec-WebSocket-Version': '13', 'Sec-WebSocket-Key': crypto.randomBytes(16).toString('base64') },
      });
      req.on('upgrade', (res, socket) => {
        socket.destroy();
        resolve({ status: res.statusCode ?? 0, body: '' });
      });
      req.on('response', (res) => {
        let body = '';
        res.on('data', (c) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body, connection: res.headers.connection }));
      });
      req.on('error', reject);
      req.end();
    });
    expect([path, r.connection]).toEqual([path, 'close']);
    expect([path, r.status, r.status === 400 ? JSON.parse(r.body).error : r.body]).toEqual([
      path,
      400,
      { code: 'VALIDATION_ERROR', message: expect.stringMatching(/^Request query is invalid: (x|after) is not a parameter of this operation, which takes none$/), details: expect.any(Object) },
    ]);
    // without them (or with only the key's parameter) the handshake goes through
    expect([path, (await handshake(path, 'chat')).status]).toEqual([path, 101]);
    expect([path, (await handshake(`${path}?access_token=whatever`, 'chat')).status]).toEqual([path, 101]);
  }
});
