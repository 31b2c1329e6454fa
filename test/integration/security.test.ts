import type { AddressInfo } from 'node:net';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import WebSocket from 'ws';
import { actingUser } from '../../api/http/actingUser';
import { STREAM_ROUTE } from '../../api/http/bearerAuth';
import { createLogger } from '../../lib/logger';
import { createProjectAndTask, insertAttempt } from '../support/attempts';
import { startTestStack, type TestStack } from '../support/harness';

const TASK_KEY = 'task-key-0123456789abcdef';
const ANN_KEY = 'ann-key-0123456789';
const BOB_KEY = 'bob-key-0123456789';
const FRONT_KEY = 'front-end-key-0123456789';
const users = [
  { email: 'Ann@example.com', apiKey: ANN_KEY },
  { email: 'bob@example.com', apiKey: BOB_KEY },
  { email: 'front@example.com', apiKey: FRONT_KEY, admin: true },
];

/** Routes a later plugin might add (a WebSocket and an SSE stream, under the real prefixes), added before ready(). */
function probeRoutes(name: string, app: FastifyInstance) {
  if (name !== 'task') return;
  app.get('/ws/auth-probe', { websocket: true, config: STREAM_ROUTE }, (socket, request) => {
    socket.send(JSON.stringify({ user: actingUser(request, 'local@armada') }));
    socket.on('message', (m: Buffer) => socket.send(`echo:${m.toString()}`));
  });
  const probeStream = (request: FastifyRequest, reply: import('fastify').FastifyReply) => {
    reply.hijack();
    reply.raw.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    reply.raw.end(`data: ${JSON.stringify({ user: actingUser(request, 'local@armada') })}\n\n`);
  };
  app.get('/api/events/auth-probe', { config: STREAM_ROUTE }, probeStream);
  // a stream route nobody marked: the path and the Accept header do not make it accept ?access_token
  app.get('/api/events/unmarked-probe', probeStream);
  app.get('/api/auth-probe/whoami', (request: FastifyRequest) => ({ user: actingUser(request, 'local@armada') }));
}

/** Opens a WebSocket and reports the HTTP status it got (101 once a message arrives). */
const wsOutcome = (url: string, headers: Record<string, string> = {}) =>
  new Promise<{ status: number; message?: string }>((resolve, reject) => {
    const ws = new WebSocket(url, { headers });
    ws.on('unexpected-response', (_req, res) => {
      resolve({ status: res.statusCode ?? 0 });
      ws.terminate();
    });
    ws.on('message', (m) => {
      resolve({ status: 101, message: m.toString() });
      ws.close();
    });
    ws.on('error', (err) => reject(err));
  });

describe('bearer authentication (key and users configured)', () => {
  let stack: TestStack;
  let base: string;
  beforeAll(async () => {
    stack = await startTestStack({ services: ['task', 'scheduler'], env: { ARMADA_TASK_API_KEY: TASK_KEY }, file: { users }, beforeReady: probeRoutes });
    await stack.app('task').listen({ host: '127.0.0.1', port: 0 });
    base = `127.0.0.1:${(stack.app('task').server.address() as AddressInfo).port}`;
  });
  afterAll(async () => stack?.close());

  test('HTTP: no header → 401, wrong key → 401, right key → 200; /health stays open', async () => {
    const none = await fetch(`http://${base}/api/projects`);
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toBe('Bearer');
    expect(await none.json()).toMatchObject({ success: false, error: { code: 'UNAUTHORIZED', message: 'Authentication required' } });
    const wrong = await fetch(`http://${base}/api/projects`, { headers: { authorization: 'Bearer not-the-key-at-all' } });
    expect(wrong.status).toBe(401);
    expect((await fetch(`http://${base}/api/projects`, { headers: { authorization: `Basic ${TASK_KEY}` } })).status).toBe(401);
    const right = await fetch(`http://${base}/api/projects`, { headers: { authorization: `Bearer ${TASK_KEY}` } });
    expect(right.status).toBe(200);
    expect(((await right.json()) as { success: boolean }).success).toBe(true);
    expect((await fetch(`http://${base}/health`)).status).toBe(200);
    expect((await fetch(`http://${base}/metrics`)).status).toBe(401);
    // unknown routes do not reveal themselves to unauthenticated callers
    expect((await fetch(`http://${base}/api/nope`)).status).toBe(401);
    // the query-string key is for streams only
    expect((await fetch(`http://${base}/api/projects?access_token=${TASK_KEY}`)).status).toBe(401);
  });

  test('?access_token is accepted only by routes marked as streams, whatever the Accept or Upgrade header says', async () => {
    const sse = { accept: 'text/event-stream' };
    const { projectId } = await createProjectAndTask(stack, undefined, { authorization: `Bearer ${TASK_KEY}` });
    const before = (await stack.db.query('SELECT count(*)::int AS n FROM tasks')).rows[0].n;
    const create = await fetch(`http://${base}/api/tasks?access_token=${TASK_KEY}`, {
      method: 'POST',
      headers: { ...sse, 'content-type': 'application/json' },
      body: JSON.stringify({ projectId, title: 'created with a key in the URL' }),
    });
    expect(create.status).toBe(401);
    expect((await stack.db.query('SELECT count(*)::int AS n FROM tasks')).rows[0].n).toBe(before);
    expect((await fetch(`http://${base}/api/projects?access_token=${TASK_KEY}`, { headers: sse })).status).toBe(401);
    expect((await fetch(`http://${base}/api/events/unmarked-probe?access_token=${TASK_KEY}`, { headers: sse })).status).toBe(401);
    expect((await fetch(`http://${base}/api/events/unmarked-probe`, { headers: { ...sse, authorization: `Bearer ${TASK_KEY}` } })).status).toBe(200);
    // the real SSE and WebSocket routes take it (a 404 for an unknown process is past authentication)
    const missing = '00000000-0000-4000-8000-000000000000';
    const sseLogs = await fetch(`http://${base}/api/events/processes/${missing}/logs?access_token=${TASK_KEY}`, { headers: sse });
    expect(sseLogs.status).toBe(404);
    expect((await fetch(`http://${base}/api/events/processes/${missing}/logs`, { headers: sse })).status).toBe(401);
    const opened = await new Promise<boolean>((resolve) => {
      const ws = new WebSocket(`ws://${base}/ws?access_token=${TASK_KEY}`);
      ws.on('open', () => {
        resolve(true);
        ws.close();
      });
      ws.on('unexpected-response', () => resolve(false));
      ws.on('error', () => resolve(false));
    });
    expect(opened).toBe(true);
    expect((await wsOutcome(`ws://${base}/ws`)).status).toBe(401);
  });

  test('the key decides who acts: X-User-Email names another user only with an admin key', async () => {
    const whoami = async (key: string, email?: string) => {
      const r = await fetch(`http://${base}/api/auth-probe/whoami`, { headers: { authorization: `Bearer ${key}`, ...(email ? { 'x-user-email': email } : {}) } });
      return [r.status, await r.json()];
    };
    expect(await whoami(ANN_KEY)).toEqual([200, { user: 'ann@example.com' }]);
    expect(await whoami(ANN_KEY, 'ANN@example.com')).toEqual([200, { user: 'ann@example.com' }]);
    const [status, body] = await whoami(ANN_KEY, 'mallory@example.com');
    expect(status).toBe(403);
    expect(body).toMatchObject({ success: false, error: { code: 'FORBIDDEN', message: expect.stringMatching(/admin key/) } });
    // the service key acts as the server's own user (git user.email), never as whoever the header names
    expect((await whoami(TASK_KEY, 'carol@example.com'))[0]).toBe(403);
    const [svcStatus, svc] = await whoami(TASK_KEY);
    expect(svcStatus).toBe(200);
    expect((svc as { user: string }).user).not.toBe('carol@example.com');
    // an admin key (users[].admin) is a trusted front end acting for its users
    expect(await whoami(FRONT_KEY, 'Carol@example.com')).toEqual([200, { user: 'carol@example.com' }]);
    expect(await whoami(FRONT_KEY)).toEqual([200, { user: 'front@example.com' }]);
  });

  test("an approval cannot be answered as another user by naming them in X-User-Email", async () => {
    const { taskId } = await createProjectAndTask(stack, undefined, { authorization: `Bearer ${TASK_KEY}` });
    const attemptId = await insertAttempt(stack, taskId);
    const auth = (key: string, email?: string) => ({ authorization: `Bearer ${key}`, 'content-type': 'application/json', ...(email ? { 'x-user-email': email } : {}) });
    const created = await fetch(`http://${base}/api/approvals`, {
      method: 'POST',
      headers: auth(ANN_KEY),
      body: JSON.stringify({ taskAttemptId: attemptId, type: 'merge', title: 'Merge it?', approvers: ['bob@example.com'] }),
    });
    expect(created.status).toBe(201);
    const approval = ((await created.json()) as { data: { id: string; createdBy: string } }).data;
    expect(approval.createdBy).toBe('ann@example.com');
    const respond = (headers: Record<string, string>) =>
      fetch(`http://${base}/api/approvals/${approval.id}/respond`, { method: 'POST', headers, body: JSON.stringify({ decision: 'approved' }) });
    expect((await respond(auth(ANN_KEY, 'bob@example.com'))).status).toBe(403);
    expect((await respond(auth(TASK_KEY, 'bob@example.com'))).status).toBe(403);
    expect((await respond(auth(ANN_KEY))).status).toBe(403); // ann is not an approver
    const pending = await fetch(`http://${base}/api/approvals/pending`, { headers: auth(BOB_KEY) });
    expect(((await pending.json()) as { data: { id: string; status: string }[] }).data.map((a) => [a.id, a.status])).toEqual([[approval.id, 'pending']]);
    const client = await stack.temporal.client();
    await client.workflow
      .getHandle(`approval:${approval.id}`)
      .terminate('test over')
      .catch(() => undefined);
  });


  test('WebSocket: no key → 401, wrong key → 401, right key (header or access_token) → connected', async () => {
    expect((await wsOutcome(`ws://${base}/ws/auth-probe`)).status).toBe(401);
    expect((await wsOutcome(`ws://${base}/ws/auth-probe`, { authorization: 'Bearer wrong-key-123' })).status).toBe(401);
    expect((await wsOutcome(`ws://${base}/ws/auth-probe?access_token=wrong-key-123`)).status).toBe(401);
    const header = await wsOutcome(`ws://${base}/ws/auth-probe`, { authorization: `Bearer ${TASK_KEY}` });
    expect(header.status).toBe(101);
    const query = await wsOutcome(`ws://${base}/ws/auth-probe?access_token=${ANN_KEY}`);
    expect(query).toEqual({ status: 101, message: JSON.stringify({ user: 'ann@example.com' }) });
    // an accepted connection stays usable after the hooks ran
    const ws = new WebSocket(`ws://${base}/ws/auth-probe`, { headers: { authorization: `Bearer ${BOB_KEY}` } });
    const replies: string[] = [];
    await new Promise<void>((resolve, reject) => {
      ws.on('message', (m) => {
        replies.push(m.toString());
        if (replies.length === 1) setTimeout(() => ws.send('ping'), 200);
        else resolve();
      });
      ws.on('error', reject);
    });
    ws.close();
    expect(replies).toEqual([JSON.stringify({ user: 'bob@example.com' }), 'echo:ping']);
  });

  test('SSE: no key → 401, wrong key → 401, right key (header or access_token) → 200 stream', async () => {
    const url = `http://${base}/api/events/auth-probe`;
    expect((await fetch(url, { headers: { accept: 'text/event-stream' } })).status).toBe(401);
    expect((await fetch(`${url}?access_token=wrong-key-123`)).status).toBe(401);
    expect((await fetch(url, { headers: { authorization: 'Bearer wrong-key-123' } })).status).toBe(401);
    const header = await fetch(url, { headers: { authorization: `Bearer ${TASK_KEY}`, accept: 'text/event-stream' } });
    expect(header.status).toBe(200);
    expect(header.headers.get('content-type')).toBe('text/event-stream');
    expect(await header.text()).toContain('data: ');
    const query = await fetch(`${url}?access_token=${BOB_KEY}`);
    expect(query.status).toBe(200);
    expect(await query.text()).toBe(`data: ${JSON.stringify({ user: 'bob@example.com' })}\n\n`);
  });

  test('CORS: the task service allows loopback origins by default (also on 401s and preflights); the scheduler all', async () => {
    const task = stack.app('task');
    const local = await task.inject({ method: 'GET', url: '/api/projects', headers: { origin: 'http://localhost:5173' } });
    expect(local.statusCode).toBe(401);
    expect(local.headers['access-control-allow-origin']).toBe('http://localhost:5173');
    const evil = await task.inject({ method: 'GET', url: '/api/projects', headers: { origin: 'https://evil.example', authorization: `Bearer ${TASK_KEY}` } });
    expect(evil.headers['access-control-allow-origin']).toBeUndefined();
    const preflight = await task.inject({
      method: 'OPTIONS',
      url: '/api/projects',
      headers: { origin: 'http://127.0.0.1:3000', 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization,content-type' },
    });
    expect(preflight.statusCode).toBe(204);
    expect(preflight.headers['access-control-allow-origin']).toBe('http://127.0.0.1:3000');
    expect(String(preflight.headers['access-control-allow-headers']).toLowerCase()).toContain('authorization');
    const sched = await stack.app('scheduler').inject({ method: 'GET', url: '/health', headers: { origin: 'https://anywhere.example' } });
    expect(sched.headers['access-control-allow-origin']).toBe('*');
  });
});

describe('a key sent as ?access_token never reaches the logs', () => {
  const lines: string[] = [];
  let stack: TestStack;
  let base: string;
  beforeAll(async () => {
    const logger = createLogger('trace', 'armada', { write: (line: string) => void lines.push(line) });
    stack = await startTestStack({ services: ['task'], env: { ARMADA_TASK_API_KEY: TASK_KEY }, file: { users }, beforeReady: probeRoutes, logger });
    await stack.app('task').listen({ host: '127.0.0.1', port: 0 });
    base = `127.0.0.1:${(stack.app('task').server.address() as AddressInfo).port}`;
  });
  afterAll(async () => stack?.close());

  test('upgrades to non-WebSocket paths, unknown SSE paths and accepted streams log no key', async () => {
    // an upgrade to a plain HTTP route gets no answer from @fastify/websocket: wait a moment, then drop it
    const plain = new WebSocket(`ws://${base}/api/projects?access_token=${ANN_KEY}`);
    plain.on('error', () => undefined);
    await new Promise((r) => setTimeout(r, 1000));
    plain.terminate();
    // unknown routes are not marked as streams: the query key does not authenticate them
    expect((await wsOutcome(`ws://${base}/ws/no-such-socket?access_token=${BOB_KEY}&x=1`)).status).toBe(401);
    expect((await fetch(`http://${base}/api/events/no-such-stream?access_token=${BOB_KEY}`)).status).toBe(401);
    const ok = await fetch(`http://${base}/api/events/auth-probe?access_token=${ANN_KEY}`);
    expect(await ok.text()).toContain('ann@example.com');
    await new Promise((r) => setTimeout(r, 200));
    expect(lines.length).toBeGreaterThan(0);
    const text = lines.join('');
    expect(text).not.toContain(ANN_KEY);
    expect(text).not.toContain(BOB_KEY);
    expect(text).not.toContain(TASK_KEY);
  });
});

describe('local mode (no keys)', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack({ services: ['task'], beforeReady: probeRoutes });
  });
  afterAll(async () => stack?.close());

  test('routes are open and carry no rate-limit headers', async () => {
    const res = await stack.app('task').inject({ method: 'GET', url: '/api/projects' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['x-ratelimit-limit']).toBeUndefined();
    const who = await stack.app('task').inject({ method: 'GET', url: '/api/auth-probe/whoami', headers: { 'x-user-email': 'Dev@Example.com' } });
    expect(who.json()).toEqual({ user: 'dev@example.com' });
  });

  test('a key sent as ?access_token anyway (a board that kept one) is dropped unread: the route answers as without it, undeclared-parameter check included', async () => {
    const app = stack.app('task');
    // a route that takes query parameters refuses undeclared ones; access_token is not refused there
    const plain = await app.inject({ method: 'GET', url: '/api/tasks?limit=5' });
    const keyed = await app.inject({ method: 'GET', url: '/api/tasks?limit=5&access_token=left-over-key' });
    expect(plain.statusCode).toBe(200);
    expect(keyed.statusCode).toBe(200);
    expect(keyed.json().pagination).toEqual(plain.json().pagination);
    // the name percent-encoded is the same parameter
    expect((await app.inject({ method: 'GET', url: '/api/tasks?limit=5&access%5Ftoken=left-over-key' })).statusCode).toBe(200);
    expect((await app.inject({ method: 'GET', url: '/api/tasks?limit=5&notAParameter=1' })).statusCode).toBe(400);
  });

  test('X-User-Email: UTF-8 is read as UTF-8, and a header longer than an address can be names nobody', async () => {
    const whoami = async (header: string) => (await stack.app('task').inject({ method: 'GET', url: '/api/auth-probe/whoami', headers: { 'x-user-email': header } })).json();
    // Node hands header bytes over as Latin-1: these are the UTF-8 bytes of the address, as a client sends them
    expect(await whoami(Buffer.from('Jöhn@Exämple.org', 'utf8').toString('latin1'))).toEqual({ user: 'jöhn@exämple.org' });
    // bytes that are not UTF-8 stay what Latin-1 says they are
    expect(await whoami('j\xf6hn@example.org')).toEqual({ user: 'jöhn@example.org' });
    // RFC 5321: an address is at most 254 characters; a longer header is not an email and is ignored like one
    const local = 'a'.repeat(64);
    const longest = `${local}@${'b'.repeat(254 - 65)}`;
    expect(await whoami(longest)).toEqual({ user: longest });
    expect(await whoami(`${longest}b`)).toEqual({ user: 'local@armada' });
    expect(await whoami(`${'x'.repeat(8000)}@example.org`)).toEqual({ user: 'local@armada' });
  });
});

describe('rate limits', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack({
      services: ['task', 'scheduler'],
      file: { users, rateLimit: { perMinutePerIp: 5, perHourPerUser: 3 } },
      env: { ARMADA_CORS_ORIGINS: 'https://app.example, https://admin.example' },
    });
  });
  afterAll(async () => stack?.close());

  const get = (key: string, ip: string, url = '/api/projects') =>
    stack.app('task').inject({ method: 'GET', url, remoteAddress: ip, headers: { authorization: `Bearer ${key}` } });

  test('per user: headers count down, the fourth request in the hour is 429 RATE_LIMIT; another user is not affected', async () => {
    const before = Math.floor(Date.now() / 1000);
    const remaining: string[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await get(ANN_KEY, '10.0.0.1');
      expect(res.statusCode).toBe(200);
      expect(res.headers['x-ratelimit-limit']).toBe('3');
      remaining.push(String(res.headers['x-ratelimit-remaining']));
      const reset = Number(res.headers['x-ratelimit-reset']);
      expect(reset).toBeGreaterThanOrEqual(before + 3600);
      expect(reset).toBeLessThanOrEqual(before + 3602);
    }
    expect(remaining).toEqual(['2', '1', '0']);
    const limited = await get(ANN_KEY, '10.0.0.2');
    expect(limited.statusCode).toBe(429);
    expect(limited.json()).toMatchObject({ success: false, error: { code: 'RATE_LIMIT' } });
    expect(limited.headers['x-ratelimit-remaining']).toBe('0');
    expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
    expect((await get(BOB_KEY, '10.0.0.3')).statusCode).toBe(200);
    // /health is never limited
    expect((await stack.app('task').inject({ method: 'GET', url: '/health', remoteAddress: '10.0.0.1' })).statusCode).toBe(200);
  });

  test('failed authentication counts against the IP window, so key guessing is limited', async () => {
    for (let i = 0; i < 5; i++) {
      const res = await get('guess-0123456789', '10.0.0.50');
      expect(res.statusCode).toBe(401);
      expect(res.headers['x-ratelimit-remaining']).toBe(String(4 - i));
    }
    const blocked = await get(BOB_KEY, '10.0.0.50');
    expect(blocked.statusCode).toBe(429);
    expect(blocked.headers['x-ratelimit-limit']).toBe('5');
  });

  test('configured CORS origins replace the defaults on every service', async () => {
    const task = stack.app('task');
    expect((await task.inject({ method: 'GET', url: '/health', headers: { origin: 'https://app.example' } })).headers['access-control-allow-origin']).toBe('https://app.example');
    expect((await task.inject({ method: 'GET', url: '/health', headers: { origin: 'http://localhost:5173' } })).headers['access-control-allow-origin']).toBeUndefined();
    const sched = stack.app('scheduler');
    expect((await sched.inject({ method: 'GET', url: '/health', headers: { origin: 'https://admin.example' } })).headers['access-control-allow-origin']).toBe('https://admin.example');
    expect((await sched.inject({ method: 'GET', url: '/health', headers: { origin: 'https://other.example' } })).headers['access-control-allow-origin']).toBeUndefined();
  });
});

describe('rate limit per IP (no authentication)', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack({ services: ['task'], file: { rateLimit: { perMinutePerIp: 3 } } });
  });
  afterAll(async () => stack?.close());

  test('the fourth request from one address in the minute is 429; another address is not affected', async () => {
    const get = (ip: string) => stack.app('task').inject({ method: 'GET', url: '/api/projects', remoteAddress: ip });
    const before = Math.floor(Date.now() / 1000);
    const seen: string[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await get('10.1.0.1');
      expect(res.statusCode).toBe(200);
      expect(res.headers['x-ratelimit-limit']).toBe('3');
      seen.push(String(res.headers['x-ratelimit-remaining']));
      expect(Number(res.headers['x-ratelimit-reset'])).toBeGreaterThanOrEqual(before + 60);
      expect(Number(res.headers['x-ratelimit-reset'])).toBeLessThanOrEqual(before + 62);
    }
    expect(seen).toEqual(['2', '1', '0']);
    const limited = await get('10.1.0.1');
    expect(limited.statusCode).toBe(429);
    expect(limited.json()).toMatchObject({ success: false, error: { code: 'RATE_LIMIT' }, meta: { version: stack.config.version } });
    expect((await get('10.1.0.2')).statusCode).toBe(200);
  });
});
