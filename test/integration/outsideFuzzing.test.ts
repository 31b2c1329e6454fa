/**
 * What session 45's outside-fuzzing pass found, each sent to the real services over loopback (Node's HTTP parser and
 * Fastify's, not `inject`), each answer checked for its status and documented shape, and refused writes checked to
 * have stored nothing:
 * - a Content-Type naming `charset` twice was read by its first one only (`utf-8; charset=latin1` passed,
 *   `latin1; charset=utf-8` was a 415): now every charset named must be UTF-8, in either order (docs/security.md);
 * - the headers' 400 read "Request headers is invalid" (now "are"), a path parameter's "Request params is invalid"
 *   (now "Request path is invalid", as the router's and the input policy's own 400s say);
 * - the code-hosting routes' error shape, exactly as docs/codehost.md "Errors" states it: their own
 *   `{success, error: "<code>", message}` for what their handler answers (415, 413, malformed JSON, the device flow
 *   unconfigured), the envelope for the 405 of the service's not-found handler;
 * - a scheduler source URL of the documented 2048 characters, non-ASCII in its path, was a 500: its unique B-tree
 *   entry was past PostgreSQL's 2704 bytes (54000); the uniqueness is now on the URL's MD5 (migration 105);
 * - a key given twice in a JSON body: the last counts, and every rule applies to the value read (documented);
 * - two Content-Type lines: Node kept the first, so `application/json` then `text/plain` was parsed as JSON and the
 *   reverse a 415; now a 400 either way, as two Host lines are;
 * - a request without content that carries a Content-Type (a client's session-wide default) to an operation that
 *   documents no request body: `application/json` was a 400 "Body cannot be empty", `text/plain` a 415; now the
 *   header is ignored there, as a Content-Encoding of no body already was.
 */
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { makeGitRepo } from '../support/harness';
import { startOutsideServices } from '../support/outsideServices';

/**
 * A flow platform at any path (a source URL's own path is its base), with room for a long one: a 2048-character path
 * of CJK characters is 18 KiB percent-encoded, past Node's 16 KiB of headers. Its health check is ok, its flows none.
 */
let platform: http.Server;
let platformUrl = '';

beforeAll(async () => {
  platform = http.createServer({ maxHeaderSize: 64 * 1024 }, (req, res) => {
    req.resume();
    res.writeHead(200, { 'content-type': 'application/json' }).end(req.url?.split('?')[0]?.endsWith('/health') ? '{"status":"ok"}' : '[]');
  });
  await new Promise<void>((r) => platform.listen(0, '127.0.0.1', r));
  platformUrl = `http://127.0.0.1:${(platform.address() as AddressInfo).port}`;
});
const o = startOutsideServices({ services: ['task', 'scheduler', 'agents'], close: () => new Promise((r) => platform?.close(() => r())) });
const base = (service: 'task' | 'scheduler' | 'agents') => `http://127.0.0.1:${o.ports[service]}`;

async function send(service: 'task' | 'scheduler' | 'agents', method: string, path: string, body: string | undefined, headers: Record<string, string> = {}) {
  const auth: Record<string, string> = service === 'task' ? {} : { 'x-api-key': o.stack.keys[service] };
  const res = await fetch(`${base(service)}${path}`, { method, body, headers: { ...auth, ...headers } });
  const text = await res.text();
  return { status: res.status, headers: res.headers, text, json: text ? (JSON.parse(text) as Record<string, unknown>) : undefined };
}

const envelopeError = (message: RegExp | string) => ({
  success: false,
  error: expect.objectContaining({ code: expect.any(String), message: typeof message === 'string' ? message : expect.stringMatching(message) }),
  meta: expect.objectContaining({ version: expect.any(String) }),
});

const { count } = o;

describe('a Content-Type naming charset more than once', () => {
  const project = (name: string) => JSON.stringify({ name, repository: { url: '/nonexistent/repository' } });

  test.each([
    'application/json; charset=utf-8; charset=latin1',
    'application/json; charset=latin1; charset=utf-8',
    'application/json; charset="UTF-8"; CHARSET=utf-16',
  ])('%s: 415 naming the other charset, whatever the order, and nothing stored', async (contentType) => {
    const [projects, sources] = [await count('projects'), await count('scheduler_sources')];
    const task = await send('task', 'POST', '/api/projects', project('twice'), { 'content-type': contentType });
    expect(task.status).toBe(415);
    expect(task.json).toEqual(envelopeError(/^Unsupported charset "(latin1|utf-16)": send the JSON body as UTF-8/));
    const source = JSON.stringify({ name: 'twice', source_type: 'langflow', url: 'http://127.0.0.1:9/x' });
    const scheduler = await send('scheduler', 'POST', '/api/v1/sources', source, { 'content-type': contentType });
    expect(scheduler.status).toBe(415);
    expect(scheduler.json).toEqual({ detail: expect.stringMatching(/^Unsupported charset "(latin1|utf-16)"/) });
    expect([await count('projects'), await count('scheduler_sources')]).toEqual([projects, sources]);
  });

  test.each([
    'application/json; charset=utf-8; charset=UTF8',
    'APPLICATION/JSON;charset="utf-8";charset=utf-8',
    // a charset inside another parameter's quoted value is that parameter's text, not a charset
    'application/json; profile="a;charset=latin1"; charset=utf-8',
  ])('%s: every charset UTF-8 is read as UTF-8 (the request reaches its route)', async (contentType) => {
    const res = await send('task', 'POST', '/api/projects', project('ok'), { 'content-type': contentType });
    // the route ran: its own answer about the repository, not the parser's 415
    expect(res.status).not.toBe(415);
    expect(res.text).not.toContain('charset');
  });
});

test('a header failing its schema is "Request headers are invalid: …" (the headers are plural)', async () => {
  const res = await send('task', 'POST', '/api/tasks/00000000-0000-4000-8000-000000000000/start', '{}', {
    'content-type': 'application/json',
    'idempotency-key': 'k'.repeat(201),
  });
  expect(res.status).toBe(400);
  expect(res.json).toEqual({
    success: false,
    error: {
      code: 'VALIDATION_ERROR',
      message: 'Request headers are invalid: idempotency-key must NOT have more than 200 characters',
      details: { 'idempotency-key': 'must NOT have more than 200 characters' },
    },
    meta: expect.any(Object),
  });
});

test('a NUL in a header and a path parameter failing its schema: "Request headers are invalid", "Request path is invalid"', async () => {
  // by inject: over a socket Node's parser refuses the NUL itself (HPE_INVALID_HEADER_TOKEN), before any policy
  const raw = await o.stack.app('task').inject({ method: 'GET', url: '/api/projects', headers: { 'x-user-email': 'a\u0000@example.com' } });
  expect([raw.statusCode, raw.json().error.message]).toEqual([400, 'Request headers are invalid: x-user-email must not contain NUL (\\u0000) characters']);
  const agent = await send('agents', 'GET', '/api/v1/agents/a%20b/status', undefined);
  const namePattern = '^([A-Za-z0-9_-][A-Za-z0-9._-]*|\\.[A-Za-z0-9_-][A-Za-z0-9._-]*|\\.\\.[A-Za-z0-9._-]+)$';
  expect([agent.status, agent.json]).toEqual([400, { detail: `Request path is invalid: name must match pattern "${namePattern}"` }]);
  // `.` and `..` are no agent's name (the config refuses them too); `...` and `.a` may be
  // over a raw socket: clients (fetch, inject) fold `.`/`..` segments, also as %2E, before they are sent
  for (const name of ['.', '..', '%2E', '%2e%2E']) {
    const r = await rawExchange('agents', `GET /api/v1/agents/${name}/status HTTP/1.1\r\nHost: localhost\r\nX-API-Key: ${o.stack.keys.agents}\r\n`, '');
    expect([name, r.status, JSON.parse(r.body)]).toEqual([name, 400, { detail: `Request path is invalid: name must match pattern "${namePattern}"` }]);
  }
  for (const agent of ['.', '..']) {
    const r = await send('agents', 'POST', '/api/v1/tasks', JSON.stringify({ agent, task: 'x' }), { 'content-type': 'application/json' });
    expect([agent, r.status, r.json]).toEqual([agent, 400, { detail: `Request body is invalid: agent must match pattern "${namePattern}"` }]);
  }
  for (const name of ['...', '.a', 'a..b']) {
    const r = await send('agents', 'GET', `/api/v1/agents/${name}/status`, undefined);
    expect([name, r.status]).toEqual([name, 404]);
  }
});

describe('code-hosting routes: the shapes docs/codehost.md "Errors" states', () => {
  const codehostShape = (error: string, message: RegExp) => ({ success: false, error, message: expect.stringMatching(message) });

  test('what their handler answers is {success, error: "<code>", message}: 415, malformed JSON, an empty JSON body, a NUL, the device flow unconfigured', async () => {
    const poll = '/api/auth/codehost/device/poll';
    const cases: [string | undefined, Record<string, string>, number, ReturnType<typeof codehostShape>][] = [
      ['x', { 'content-type': 'text/plain' }, 415, codehostShape('validation_error', /^Unsupported Content-Type/)],
      ['{"device_code":"a"}', { 'content-type': 'application/json; charset=utf-8; charset=latin1' }, 415, codehostShape('validation_error', /^Unsupported charset "latin1"/)],
      ['{bad', { 'content-type': 'application/json' }, 400, codehostShape('validation_error', /^Malformed JSON/)],
      [undefined, { 'content-type': 'application/json' }, 400, codehostShape('validation_error', /^Body cannot be empty/)],
      ['{"device_code":"a\\u0000"}', { 'content-type': 'application/json' }, 400, codehostShape('validation_error', /^Request body is invalid: device_code must not contain NUL/)],
    ];
    for (const [body, headers, status, shape] of cases) {
      const res = await send('task', 'POST', poll, body, headers);
      expect({ body, status: res.status, json: res.json }).toEqual({ body, status, json: shape });
    }
    const start = await send('task', 'POST', '/api/auth/codehost/device', '{}', { 'content-type': 'application/json' });
    expect([start.status, start.json]).toEqual([400, codehostShape('codehost_not_configured', /ARMADA_CODEHOST_CLIENT_ID/)]);
    expect(await count('codehost_device_flows')).toBe(0);
  });

  test('a method a code-hosting path does not serve is the not-found handler\'s 405, in the envelope, with Allow', async () => {
    const res = await send('task', 'GET', '/api/auth/codehost/device/poll', undefined);
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('OPTIONS, POST');
    expect(res.json).toEqual(envelopeError('Method GET is not allowed on /api/auth/codehost/device/poll; allowed: OPTIONS, POST'));
    const unknown = await send('task', 'GET', '/api/auth/codehost/nope', undefined);
    expect([unknown.status, unknown.json]).toEqual([404, envelopeError('Route GET /api/auth/codehost/nope not found')]);
  });
});

test('a source URL of the documented 2048 characters, non-ASCII and incompressible, is stored (it was a 500), and is still unique', async () => {
  // random CJK characters: 3 bytes of UTF-8 each, which no compression of the index entry brings under 2704 bytes
  let seed = 45;
  const random = () => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed / 2 ** 31;
  };
  const prefix = `${platformUrl}/`;
  const path = Array.from({ length: 2048 - prefix.length }, () => String.fromCodePoint(0x4e00 + Math.floor(random() * 0x5000))).join('');
  const url = `${prefix}${path}`;
  expect([...url]).toHaveLength(2048);
  const create = (name: string) => send('scheduler', 'POST', '/api/v1/sources', JSON.stringify({ name, source_type: 'langflow', url }), { 'content-type': 'application/json' });
  const first = await create('long-url');
  expect([first.status, first.text.slice(0, 100)]).toEqual([201, expect.stringMatching(/^{"id":/)]);
  // stored in canonical form (docs/scheduler.md#sources): the path percent-encoded, as fetch sends it, 9 characters
  // for each of these; uniqueness is on the MD5 of that text
  const canonical = new URL(url).href;
  expect(canonical).toHaveLength(prefix.length + 9 * (2048 - prefix.length));
  const stored = await o.stack.db.query<{ url: string }>('SELECT url FROM scheduler_sources WHERE id = $1', [first.json?.id]);
  expect(stored.rows.map((r) => r.url)).toEqual([canonical]);
  const again = await create('long-url-again');
  expect([again.status, again.json]).toEqual([400, { detail: `Source with URL ${canonical} already exists` }]);
  expect((await o.stack.db.query('SELECT count(*)::int AS n FROM scheduler_sources WHERE url = $1', [canonical])).rows[0].n).toBe(1);
});

test('a key given twice in a JSON body: the last one counts, and the rules apply to it (docs/security.md)', async () => {
  const repo = makeGitRepo();
  const project = await send('task', 'POST', '/api/projects', JSON.stringify({ name: 'dup-keys', repository: { url: repo } }), { 'content-type': 'application/json' });
  expect(project.status).toBe(201);
  const projectId = (project.json?.data as { id?: string } | undefined)?.id;
  const create = (body: string) => send('task', 'POST', '/api/tasks', body, { 'content-type': 'application/json' });
  const kept = await create(`{"projectId":"${projectId}","title":"\\u0000","title":"last wins"}`);
  expect([kept.status, (kept.json?.data as { title?: string } | undefined)?.title]).toEqual([201, 'last wins']);
  const tasks = await count('tasks');
  const refused = await create(`{"projectId":"${projectId}","title":"first","title":"a\\u0000b"}`);
  expect([refused.status, refused.json]).toEqual([400, envelopeError('Request body is invalid: title must not contain NUL (\\u0000) characters')]);
  expect(await count('tasks')).toBe(tasks);
});

/** One raw HTTP/1.1 exchange (what fetch cannot send: a header line twice); the status and the body. */
function rawExchange(service: 'task' | 'scheduler' | 'agents', head: string, body: string): Promise<{ status: number; body: string }> {
  const port = o.ports[service];
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () => socket.write(`${head}Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`));
    let out = '';
    socket.on('data', (d) => {
      out += d.toString('utf8');
    });
    socket.on('error', reject);
    socket.on('close', () => {
      const [status = '', ...rest] = out.split('\r\n\r\n');
      resolve({ status: Number(status.split(' ')[1]), body: rest.join('\r\n\r\n') });
    });
  });
}

test.each([
  ['application/json', 'text/plain'],
  ['text/plain', 'application/json'],
  ['application/json', 'application/json'],
])('two Content-Type lines (%s, then %s) are a 400 "content-type must be sent once" in the service shape, nothing stored', async (first, second) => {
  const [projects, sources] = [await count('projects'), await count('scheduler_sources')];
  const task = await rawExchange('task', `POST /api/projects HTTP/1.1\r\nHost: localhost\r\nContent-Type: ${first}\r\nContent-Type: ${second}\r\n`, JSON.stringify({ name: 'two-types', repository: { url: makeGitRepo() } }));
  expect([task.status, JSON.parse(task.body)]).toEqual([
    400,
    { success: false, error: { code: 'VALIDATION_ERROR', message: 'Request headers are invalid: content-type must be sent once', details: { 'content-type': 'must be sent once' } }, meta: expect.any(Object) },
  ]);
  const scheduler = await rawExchange(
    'scheduler',
    `POST /api/v1/sources HTTP/1.1\r\nHost: localhost\r\nX-API-Key: ${o.stack.keys.scheduler}\r\nContent-Type: ${first}\r\nContent-Type: ${second}\r\n`,
    JSON.stringify({ name: 'two-types', source_type: 'langflow', url: `${platformUrl}/two-types` }),
  );
  expect([scheduler.status, JSON.parse(scheduler.body)]).toEqual([400, { detail: 'Request headers are invalid: content-type must be sent once' }]);
  expect([await count('projects'), await count('scheduler_sources')]).toEqual([projects, sources]);
});

describe('a Content-Type on a request without content, to an operation that takes no body', () => {
  test.each(['application/json', 'text/plain', 'application/json; charset=utf-8'])('%s: answered as without it (DELETE, cancel; task and scheduler)', async (contentType) => {
    const missing = '00000000-0000-4000-8000-000000000000';
    const del = await send('task', 'DELETE', `/api/webhooks/${missing}`, undefined, { 'content-type': contentType });
    expect([del.status, del.json]).toEqual([404, envelopeError(/not found/)]);
    const cancel = await send('task', 'POST', `/api/tasks/${missing}/cancel`, undefined, { 'content-type': contentType, 'content-length': '0' });
    expect([cancel.status, cancel.json]).toEqual([404, envelopeError(/not found/)]);
    const workflow = await send('scheduler', 'DELETE', '/api/v1/workflows/no-such-workflow', undefined, { 'content-type': contentType });
    expect([workflow.status, workflow.json]).toEqual([404, { detail: 'Workflow not found' }]);
  });

  test('an operation that takes a body still says it is missing; content sent to a bodiless one is still read (a 415 for text)', async () => {
    const create = await send('task', 'POST', '/api/projects', undefined, { 'content-type': 'application/json' });
    expect([create.status, create.json]).toEqual([400, envelopeError('Body cannot be empty when Content-Type is application/json')]);
    const text = await send('task', 'DELETE', '/api/webhooks/00000000-0000-4000-8000-000000000000', 'x', { 'content-type': 'text/plain' });
    expect([text.status, text.json]).toEqual([415, envelopeError('Unsupported Content-Type: send application/json')]);
  });
});
