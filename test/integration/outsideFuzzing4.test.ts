/**
 * What session 48's outside-fuzzing round found and decided, each sent to the real services over loopback as raw
 * HTTP/1.1 (Node's parser and Fastify's, not `inject`, which resolves dot segments itself), each answer checked for
 * its status and documented shape:
 * - a dot segment under a `/svc/<service>/` prefix (`%2e%2e`, `%2E%2E`, `..%2f`, `%252e%252e`, or as it is) was
 *   resolved by `new URL` before the forwarding's call, so `/svc/scheduler/%2e%2e/agents/…` called the path above
 *   the scheduler's base URL (another service behind the same gateway) with the scheduler's key; now a 400 naming
 *   the dot segment, and nothing is forwarded (docs/security.md); and a service's 405 lost its `Allow` there;
 * - `Range`, `If-Range`, the conditional headers and odd `Accept` values on a live stream (SSE and NDJSON): ignored
 *   by decision, the stream a 200 from its start with `Accept-Ranges: none`, never a 206, 304, 412 or 416, never a
 *   hang or a broken stream (docs/attempts.md, "Streams");
 * - the SSE routes answered `Connection: keep-alive` whatever the request said, so a client that sent
 *   `Connection: close` waited on an open socket after a HEAD or a finished stream (its end is the close): now the
 *   connection closes as asked;
 * - a POST with `Upgrade: h2c` (what `curl --http2 -d …` sends on http://) and a JSON body to the task service was a
 *   400 "Request body size did not match Content-Length": Node hands an upgrade request's body to the upgrade
 *   listener (the WebSocket plugin's), not to the request; now the body is read and the request answered as without
 *   Upgrade, as the other services (no WebSockets, so no upgrade listener) always did; within the request timeout,
 *   which no longer applied to the upgraded socket (a body that stopped short held the request for ever).
 * The sweep that led here (every operation of the four documents with duplicated and array query keys, hostile path
 * segments, JSON oddities, framing, HEAD/OPTIONS, documented bounds, response schemas with real ids, WebSockets)
 * found no 5xx, no stack trace, and no answer outside the documented shapes besides these.
 */
import http from 'node:http';
import net from 'node:net';
import { insertAttempt } from '../../lib/db/attempts';
import { appendLogs, finishProcessRow, insertProcess, type LogEntry } from '../../lib/db/processes';
import { api } from '../support/attemptHelpers';
import { listenOnLoopback, makeGitRepo, startTestStack } from '../support/harness';
import { rawExchange } from '../support/rawExchange';
import { startOutsideServices, type Json, type Service } from '../support/outsideServices';

/** What reached the gateway the scheduler's URL names (a base path in front of it, as a reverse proxy gives). */
const gatewayCalls: { url: string; key: string | undefined }[] = [];
let gateway: http.Server;
let gatewayPort = 0;
const seeded = { task: '', attempt: '11111111-1111-4111-8111-111111111111', process: '22222222-2222-4222-8222-222222222222', finished: '33333333-3333-4333-8333-333333333333' };

beforeAll(async () => {
  gateway = http.createServer((req, res) => {
    gatewayCalls.push({ url: req.url ?? '', key: req.headers['x-api-key'] as string | undefined });
    // as the scheduler answers a method a path does not serve
    if (req.method === 'DELETE' && req.url === '/gateway/scheduler/api/v1/sources') {
      res.writeHead(405, { 'content-type': 'application/json', allow: 'GET, HEAD, OPTIONS, POST' }).end('{"detail":"Method DELETE is not allowed"}');
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' }).end('{"gateway":true}');
  });
  await new Promise<void>((r) => gateway.listen(0, '127.0.0.1', r));
  gatewayPort = (gateway.address() as net.AddressInfo).port;
});

const o = startOutsideServices({
  options: () => ({ env: { ARMADA_SCHEDULER_URL: `http://127.0.0.1:${gatewayPort}/gateway/scheduler` } }),
  async after(stack) {
    const h = api(stack);
    seeded.task = await h.task((await h.project()).id, 'outside fuzzing 4');
    await insertAttempt(stack.db, { id: seeded.attempt, taskId: seeded.task, llm: 'scripted', model: null, status: 'running', branchPrefix: 'armada', baseBranch: 'main', options: {}, description: '' });
    await insertProcess(stack.db, { id: seeded.process, attemptId: seeded.attempt, taskId: seeded.task, llm: 'scripted', model: null, kind: 'initial', prompt: 'p' });
    const entry = (message: string): LogEntry => ({ level: 'info', message, timestamp: new Date().toISOString(), source: 'stdout' });
    await appendLogs(stack.db, seeded.process, seeded.attempt, [entry('line one'), entry('line two')]);
    await insertProcess(stack.db, { id: seeded.finished, attemptId: seeded.attempt, taskId: seeded.task, llm: 'scripted', model: null, kind: 'initial', prompt: 'p' });
    await appendLogs(stack.db, seeded.finished, seeded.attempt, [entry('only line')]);
    await finishProcessRow(stack.db, seeded.finished, 'completed', { exitCode: 0, error: null });
  },
  close: () => new Promise((r) => gateway?.close(() => r())),
});
const { ports, keyLine, bodyless } = o;

/**
 * The head and the first bytes of an answer that may not end (a live stream): read until `until` is seen in it or
 * the server closes. Not a timing check: a stream that sends nothing fails the test by jest's timeout.
 */
function readUntil(port: number, request: string, until: RegExp): Promise<{ status: number; head: string; body: string }> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () => socket.write(request));
    let text = '';
    const done = () => {
      socket.destroy();
      const end = text.indexOf('\r\n\r\n');
      resolve({ status: Number(text.split(' ')[1]), head: text.slice(0, end).toLowerCase(), body: text.slice(end + 4) });
    };
    socket.on('data', (c: Buffer) => {
      text += c.toString('utf8');
      if (until.test(text)) done();
    });
    socket.on('close', done);
    socket.on('error', reject);
  });
}

/** rawExchange with the request in two writes, the second once the server has had the first (a body split from its headers). */
function splitExchange(port: number, first: string, second: string): Promise<{ status: number; json: unknown }> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () => {
      socket.write(first);
      setTimeout(() => socket.write(second), 100);
    });
    let text = '';
    socket.on('data', (c: Buffer) => {
      text += c.toString('utf8');
    });
    socket.on('error', reject);
    socket.on('close', () => {
      const body = text.slice(text.indexOf('\r\n\r\n') + 4);
      resolve({ status: Number(text.split(' ')[1]), json: JSON.parse(body) });
    });
  });
}

/** The data of a chunked body read so far (a stream not yet ended: its last chunk may be cut short). */
function dechunked(body: string): string {
  let out = '';
  let rest = body;
  for (let nl = rest.indexOf('\r\n'); nl > 0; nl = rest.indexOf('\r\n')) {
    const size = Number.parseInt(rest.slice(0, nl), 16);
    out += rest.slice(nl + 2, nl + 2 + size);
    rest = rest.slice(nl + 2 + size + 2);
  }
  return out;
}

describe('a dot segment under a /svc/<service>/ prefix', () => {
  const SPELLINGS = ['%2e%2e', '%2E%2E', '%2e%2E', '..', '.', '%2e', '.%2e', '%2e.', '..%2f..', '..%2F', '..%5c', '%252e%252e', '%25252e%25252e', 'x/%2e%2e/%2e%2e'];

  test.each(SPELLINGS)('%s: a 400 in the envelope naming it; nothing reaches the gateway', async (spelling) => {
    const before = gatewayCalls.length;
    for (const service of ['scheduler', 'agents', 'traces']) {
      const target = `/svc/${service}/${spelling}/agents/api/v1/agents`;
      const res = await rawExchange(ports.task as number, bodyless('task', 'GET', target));
      expect([target, res.status, (res.json as Json).error]).toEqual([
        target,
        400,
        {
          code: 'VALIDATION_ERROR',
          message: expect.stringMatching(new RegExp(`^Request path is invalid: /svc/${service}/\\S+ holds a dot segment \\("\\." or "\\.\\.", however encoded\\); /svc/${service}/ forwards the ${service} service's own paths, written without dot segments$`)),
          details: { path: 'holds a dot segment' },
        },
      ]);
    }
    expect(gatewayCalls.slice(before)).toEqual([]);
  });

  test('paths without one are forwarded under the base as they are, dots inside a segment and a dot query included', async () => {
    const before = gatewayCalls.length;
    for (const path of ['/api/v1/sources', '/api/v1/workflows/a..b', '/api/v1/workflows/.hidden', '/api/v1/sources?q=..%2f..', '/api/v1/workflows/%2541']) {
      const res = await rawExchange(ports.task as number, bodyless('task', 'GET', `/svc/scheduler${path}`));
      expect([path, res.status, res.json]).toEqual([path, 200, { gateway: true }]);
    }
    expect(gatewayCalls.slice(before)).toEqual(
      ['/api/v1/sources', '/api/v1/workflows/a..b', '/api/v1/workflows/.hidden', '/api/v1/sources?q=..%2f..', '/api/v1/workflows/%2541'].map((p) => ({ url: `/gateway/scheduler${p}`, key: o.stack.keys.scheduler })),
    );
  });

  test("the service's 405 keeps its Allow through the forwarding (it was dropped: a 405 without Allow)", async () => {
    const res = await rawExchange(ports.task as number, bodyless('task', 'DELETE', '/svc/scheduler/api/v1/sources'));
    expect([res.status, res.headers.allow, res.json]).toEqual([405, 'GET, HEAD, OPTIONS, POST', { detail: 'Method DELETE is not allowed' }]);
  });

  test("a dot segment on the service's own paths is the 404 of any path no route serves", async () => {
    for (const target of ['/api/x/../projects', '/api/%2e%2e/api/projects', '/svc/%2e%2e/api/projects']) {
      const res = await rawExchange(ports.task as number, bodyless('task', 'GET', target));
      expect([target, res.status, ((res.json as Json).error as Json).code]).toEqual([target, 404, 'NOT_FOUND']);
    }
  });
});

describe('Range, conditional and Accept headers on a live stream', () => {
  const HEADERS = [
    'Range: bytes=0-1',
    'Range: bytes=5-1',
    'Range: items=0-',
    'If-Range: "x"',
    'If-None-Match: *',
    'If-Match: "nope"',
    'If-Modified-Since: Wed, 21 Oct 2015 07:28:00 GMT',
    'If-Unmodified-Since: Wed, 21 Oct 2015 07:28:00 GMT',
    'Accept: application/json',
    'Accept: text/event-stream;q=0, */*;q=0',
    'Accept: text/html',
  ];

  test.each(HEADERS)('%s: the SSE log stream is a 200 from its first line, Accept-Ranges: none', async (header) => {
    const res = await readUntil(ports.task as number, bodyless('task', 'GET', `/api/events/processes/${seeded.process}/logs`, `${header}\r\n`), /line two/);
    expect(res.status).toBe(200);
    expect(res.head).toContain('content-type: text/event-stream; charset=utf-8');
    expect(res.head).toContain('accept-ranges: none');
    expect(res.head).not.toContain('content-range');
    expect(dechunked(res.body)).toMatch(/^retry: 2000\n\nid: 1\nevent: log\ndata: \{[^\n]*"line one"[^\n]*\}\n\nid: 2\nevent: log\ndata: \{[^\n]*"line two"/);
  });

  test.each(HEADERS)('%s: the NDJSON log is a 200 with every line, followed or not; HEAD ends at once', async (header) => {
    for (const path of [`/api/processes/${seeded.process}/logs`, `/api/attempts/${seeded.attempt}/logs`, `/api/processes/${seeded.process}/logs?follow=true`, `/api/tasks/${seeded.task}/logs?follow=true`]) {
      const res = await readUntil(ports.task as number, bodyless('task', 'GET', path, `${header}\r\n`), /line two[^\n]*\n/);
      expect([path, res.status, res.head.includes('accept-ranges: none'), res.head.includes('content-range')]).toEqual([path, 200, true, false]);
      expect(res.body).toMatch(/"line one"[^\n]*\n[^\n]*"line two"/);
      const head = await rawExchange(ports.task as number, bodyless('task', 'HEAD', path, `${header}\r\n`));
      expect([path, head.status, head.body]).toEqual([path, 200, '']);
    }
  });

  test('the diff stream and HEAD on both SSE routes answer the same way', async () => {
    for (const path of [`/api/events/task-attempts/${seeded.attempt}/diff`, `/api/events/processes/${seeded.process}/logs`]) {
      const res = await readUntil(ports.task as number, bodyless('task', 'GET', path, 'Range: bytes=0-0\r\nIf-None-Match: *\r\n'), /retry: 2000\n\n/);
      expect([path, res.status, res.head.includes('accept-ranges: none')]).toEqual([path, 200, true]);
      const head = await rawExchange(ports.task as number, bodyless('task', 'HEAD', path, 'Range: bytes=0-0\r\nIf-Modified-Since: Wed, 21 Oct 2015 07:28:00 GMT\r\n'));
      expect([path, head.status, head.headers['accept-ranges'], head.body]).toEqual([path, 200, 'none', '']);
    }
  });

  test('an error before the stream is the JSON envelope whatever Accept names', async () => {
    const missing = '00000000-0000-4000-8000-000000000000';
    for (const accept of ['text/event-stream', 'text/html', 'application/xml']) {
      const res = await rawExchange(ports.task as number, bodyless('task', 'GET', `/api/events/processes/${missing}/logs`, `Accept: ${accept}\r\nRange: bytes=0-1\r\n`));
      expect([accept, res.status, res.headers['content-type'], ((res.json as Json).error as Json).code]).toEqual([accept, 404, 'application/json; charset=utf-8', 'NOT_FOUND']);
    }
  });
});

describe('Connection: close on an SSE route', () => {
  test('a HEAD and a finished stream close the connection as asked (they kept it open: Connection: keep-alive)', async () => {
    for (const path of [`/api/events/processes/${seeded.finished}/logs`, `/api/events/processes/${seeded.process}/logs`, `/api/events/task-attempts/${seeded.attempt}/diff`]) {
      // rawExchange resolves when the server closes the connection: it never did
      const head = await rawExchange(ports.task as number, bodyless('task', 'HEAD', path));
      expect([path, head.status, head.headers.connection, head.body]).toEqual([path, 200, 'close', '']);
    }
    const done = await rawExchange(ports.task as number, bodyless('task', 'GET', `/api/events/processes/${seeded.finished}/logs`));
    expect([done.status, done.headers.connection]).toEqual([200, 'close']);
    expect(dechunked(done.body)).toMatch(/event: log\ndata: [^\n]*"only line"[\s\S]*event: end\ndata: \{"processId":"33333333-3333-4333-8333-333333333333","status":"completed"\}/);
  });

  test('a keep-alive client keeps its connection for the next request once the stream ended', async () => {
    const socket = net.connect(ports.task as number, '127.0.0.1');
    let text = '';
    socket.on('data', (c: Buffer) => {
      text += c.toString('utf8');
    });
    const seen = (pattern: RegExp) =>
      new Promise<void>((resolve, reject) => {
        const look = () => (pattern.test(text) ? resolve() : socket.once('data', look));
        socket.once('close', () => reject(new Error(`closed before ${pattern}: ${text.slice(-300)}`)));
        look();
      });
    socket.write(`GET /api/events/processes/${seeded.finished}/logs HTTP/1.1\r\nHost: localhost\r\n\r\n`);
    await seen(/event: end\n[^\n]*\n\n\r\n0\r\n\r\n/);
    socket.write('GET /health HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n');
    await seen(/HTTP\/1\.1 200 OK[\s\S]*"status":"ok"/);
    socket.destroy();
  });
});

describe('a request with a body that asks to upgrade (Upgrade: h2c)', () => {
  const h2c = (service: Service, target: string, body: string, extra = '') =>
    `POST ${target} HTTP/1.1\r\nHost: localhost\r\n${keyLine(service)}Connection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQAAP__\r\nContent-Type: application/json\r\n${extra}\r\n${body}`;

  test('is answered as without Upgrade on every service, its body read whole; the connection then closes', async () => {
    const project = JSON.stringify({ name: 'h2c-project', repository: { url: makeGitRepo() } });
    const task = await rawExchange(ports.task as number, h2c('task', '/api/projects', project, `Content-Length: ${Buffer.byteLength(project)}\r\n`));
    expect([task.status, ((task.json as Json).data as Json).name, task.headers.connection]).toEqual([201, 'h2c-project', 'close']);
    // the headers and the body's start in one write, the rest in another: what came with the headers and what is
    // still on the socket are both read
    const long = JSON.stringify({ projectId: ((task.json as Json).data as Json).id, title: 'h2c task', description: 'd'.repeat(90_000) });
    const created = await splitExchange(ports.task as number, h2c('task', '/api/tasks', long.slice(0, 100), `Content-Length: ${Buffer.byteLength(long)}\r\n`), long.slice(100));
    expect([created.status, (((created.json as Json).data as Json).description as string).length]).toEqual([201, 90_000]);
    const memory = JSON.stringify({ content: 'through h2c' });
    // the agents service has no WebSockets: Node answers it as a plain request, and keeps the connection
    const agents = await readUntil(ports.agents as number, h2c('agents', '/api/v1/memory', memory, `Content-Length: ${Buffer.byteLength(memory)}\r\n`), /"content":"through h2c"/);
    expect(agents.status).toBe(201);
    // an empty body is still "Body cannot be empty", as without Upgrade
    const empty = await rawExchange(ports.task as number, h2c('task', '/api/projects', '', 'Content-Length: 0\r\n'));
    expect([empty.status, ((empty.json as Json).error as Json).message]).toEqual([400, 'Body cannot be empty when Content-Type is application/json']);
  });

  test('one whose body stops short is the 408 of any request not received in time, and the connection closes', async () => {
    const own = await startTestStack({ services: ['task'], env: { ARMADA_REQUEST_TIMEOUT_MS: '1500' } });
    try {
      const port = (await listenOnLoopback(own, ['task'])).task as number;
      const res = await rawExchange(port, h2c('task', '/api/projects', '{"name":', 'Content-Length: 100\r\n'));
      expect([res.status, (res.json as Json).error]).toEqual([408, { code: 'REQUEST_TIMEOUT', message: 'The request was not received in time; send it again' }]);
    } finally {
      await own.close();
    }
  });

  test('a chunked one is a 400 saying to send Content-Length, in the envelope; nothing is stored', async () => {
    const before = (await o.stack.db.query<{ n: number }>('SELECT count(*)::int AS n FROM projects')).rows[0]?.n;
    const body = JSON.stringify({ name: 'h2c-chunked', repository: { url: makeGitRepo() } });
    const res = await rawExchange(ports.task as number, h2c('task', '/api/projects', `${Buffer.byteLength(body).toString(16)}\r\n${body}\r\n0\r\n\r\n`, 'Transfer-Encoding: chunked\r\n'));
    expect([res.status, (res.json as Json).error]).toEqual([
      400,
      {
        code: 'VALIDATION_ERROR',
        message: 'Request headers are invalid: a request that asks to upgrade (Upgrade) must send its body with Content-Length, not chunked; or send it without Upgrade',
        details: { 'transfer-encoding': 'not with Upgrade' },
      },
    ]);
    expect((await o.stack.db.query<{ n: number }>('SELECT count(*)::int AS n FROM projects')).rows[0]?.n).toBe(before);
  });
});
