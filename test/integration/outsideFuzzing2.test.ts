/**
 * What session 46's outside-fuzzing round found, each sent to the real services over loopback as a raw HTTP/1.1
 * exchange (Node's parser and Fastify's, not `inject`), each answer checked for its status and documented shape:
 * - an absolute-form request target (`GET http://host/api/projects HTTP/1.1`, which a server MUST accept) was routed,
 *   but every hook read the whole URL: the 405 was a 404 naming the URL, the key services' open `/health` asked for
 *   a key, and the board's `/svc/*` forwarding cut the service's path off by length, so the target's authority chose
 *   the host and port the scheduler's X-API-Key went to; percent-encoded letters (`/%68ealth`, `/svc/%73cheduler/…`)
 *   were routed but not seen by the hooks either, and a fragment (`/api/projects#x`) was read as a query parameter;
 * - `OPTIONS *` was a 404 (now 204 with every method served in Allow); `GET *` was the board's page (now a 400);
 * - a browser page of any origin could open the task service's WebSockets (CORS does not cover them): now a 403 unless
 *   the origin is the service's own or one CORS allows;
 * - a documented header sent twice (`Last-Event-ID: 1`, `Last-Event-ID: 2`) was "must be integer" (Node joins the
 *   lines); now "must be sent once";
 * - a query parameter an operation does not declare was "Request querystring is invalid: staus is not a known field"
 *   (Fastify's word, no hint of the right name); now "Request query is invalid: staus is not a parameter of this
 *   operation; it takes …"; a path parameter past the router's limit names the limit;
 * - a scheduler source name took control characters (an escape sequence `armada sources list` printed as it is),
 *   which project names already refused;
 * - schemathesis (seed 4603, traces) found `sentAt: "0001-01-01T00:00:00+00:01"` refused though the document allowed
 *   it: the bound was on the instant, which no schema said; now a pattern both the document and validation apply.
 */
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { STORABLE_DATE_TIME_PATTERN } from '../../api/http/validation';
import { startTestStack } from '../support/harness';
import { rawExchange } from '../support/rawExchange';
import { SERVICES, startOutsideServices } from '../support/outsideServices';

const o = startOutsideServices();
const { ports, withBody, bodyless, count } = o;

describe('an absolute-form request target (RFC 9112 §3.2.2) is read as its path and query', () => {
  test.each(SERVICES)('%s: answered as the origin-form target is: open paths open, the 405 with Allow, the 404 naming the path', async (service) => {
    const prefix = service === 'task' ? '/api' : '/api/v1';
    const collection = { task: '/api/projects', scheduler: '/api/v1/sources', agents: '/api/v1/agents', traces: '/api/v1/traces' }[service];
    // /health needs no key, whatever form its target takes
    const health = await rawExchange(ports[service] as number, 'GET http://x/health HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n');
    expect([health.status, (health.json as { status: string }).status]).toEqual([200, 'ok']);
    const list = await rawExchange(ports[service] as number, bodyless(service, 'GET', `http://x${collection}?limit=1`));
    const origin = await rawExchange(ports[service] as number, bodyless(service, 'GET', `${collection}?limit=1`));
    expect(list.status).toBe(200);
    expect(list.status).toBe(origin.status);
    const allow = (await rawExchange(ports[service] as number, bodyless(service, 'PROPFIND', collection))).headers.allow;
    expect(allow).toContain('GET');
    for (const target of [`http://x${collection}`, `HTTPS://other.example:1${collection}`]) {
      const refused = await rawExchange(ports[service] as number, bodyless(service, 'PROPFIND', target));
      expect({ target, status: refused.status, allow: refused.headers.allow }).toEqual({ target, status: 405, allow });
    }
    const unknown = await rawExchange(ports[service] as number, bodyless(service, 'GET', `http://x${prefix}/no-such-resource`));
    expect(unknown.status).toBe(404);
    expect(unknown.body).toContain(`GET ${prefix}/no-such-resource`);
    expect(unknown.body).not.toContain('http://x');
  });

  test("the board's /svc forwarding never sends a service's key anywhere but that service, whatever the target's authority", async () => {
    // a receiver on port 1xxxx and a scheduler URL of port 1: the authority `aaaaaaaXXXX` made the forwarding's URL
    // http://127.0.0.1:1XXXX/… (the path was cut off the target by length, seven characters into the authority)
    const received: http.IncomingHttpHeaders[] = [];
    const receiver = http.createServer((req, res) => {
      received.push(req.headers);
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"stolen":true}');
    });
    let port = 0;
    for (let p = 10000 + Math.floor(Math.random() * 9000); !port; p++) {
      port = await new Promise<number>((resolve) => {
        receiver.once('error', () => resolve(0));
        receiver.listen(p, '127.0.0.1', () => resolve(p));
      });
    }
    const own = await startTestStack({ services: ['task'], env: { ARMADA_SCHEDULER_URL: 'http://127.0.0.1:1' } });
    try {
      const app = own.app('task');
      await app.listen({ port: 0, host: '127.0.0.1' });
      const taskPort = (app.server.address() as AddressInfo).port;
      const authority = `aaaaaaa${String(port).slice(1)}`;
      const res = await rawExchange(taskPort, `GET http://${authority}/svc/scheduler/api/v1/sources HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n`);
      // forwarded to the scheduler's own URL, where nothing listens: its 503, not the receiver's answer
      expect([res.status, (res.json as { error: { code: string } }).error.code]).toEqual([503, 'SERVICE_UNAVAILABLE']);
      expect(received).toEqual([]);
    } finally {
      await own.close();
      await new Promise((r) => receiver.close(r));
    }
  });
});

test('a query parameter an operation does not declare is a 400 naming it and the ones the operation takes', async () => {
  const traces = await rawExchange(ports.traces as number, bodyless('traces', 'GET', '/api/v1/traces/analytics?dayz=7'));
  expect([traces.status, traces.json]).toEqual([400, { detail: 'Request query is invalid: dayz is not a parameter of this operation; it takes days' }]);
  const scheduler = await rawExchange(ports.scheduler as number, bodyless('scheduler', 'GET', '/api/v1/executions?staus=failed'));
  expect([scheduler.status, scheduler.json]).toEqual([400, { detail: expect.stringMatching(/^Request query is invalid: staus is not a parameter of this operation; it takes workflow, status, /) }]);
  const projects = await rawExchange(ports.task as number, bodyless('task', 'GET', '/api/projects?nmae=x'));
  expect([projects.status, (projects.json as { error: unknown }).error]).toEqual([
    400,
    { code: 'VALIDATION_ERROR', message: expect.stringMatching(/^Request query is invalid: nmae is not a parameter of this operation; it takes /), details: { nmae: expect.stringMatching(/^is not a parameter of this operation; it takes /) } },
  ]);
});

describe('percent-encoded letters and a fragment: the hooks read the path the router routes', () => {
  test('/%68ealth is /health (open on the key services), /%61pi/… the API\'s JSON 404, and #… is dropped', async () => {
    const health = await rawExchange(ports.scheduler as number, 'GET /%68ealth HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n');
    expect(health.status).toBe(200);
    const page = await rawExchange(ports.task as number, bodyless('task', 'GET', '/%61pi/nope', 'Accept: text/html\r\n'));
    expect([page.status, (page.json as { error: { message: string } }).error.message]).toEqual([404, 'Route GET /api/nope not found']);
    const fragment = await rawExchange(ports.task as number, bodyless('task', 'GET', '/api/projects?limit=1#frag'));
    expect([fragment.status, (fragment.json as { pagination: { limit: number } }).pagination.limit]).toEqual([200, 1]);
  });
});

describe('the asterisk-form target', () => {
  test.each(SERVICES)('%s: OPTIONS * is 204 with every method the service serves; GET * and POST * are a 400 saying what to send', async (service) => {
    const options = await rawExchange(ports[service] as number, bodyless(service, 'OPTIONS', '*'));
    expect(options.status).toBe(204);
    expect(options.headers.allow?.split(', ')).toEqual(expect.arrayContaining(['GET', 'HEAD', 'OPTIONS', 'POST']));
    for (const method of ['GET', 'POST']) {
      const res = await rawExchange(ports[service] as number, bodyless(service, method, '*', method === 'POST' ? 'Content-Length: 0\r\n' : ''));
      const message = `Request path is invalid: "*" is a target for OPTIONS only; send ${method} to a path of the service, such as /health`;
      expect([method, res.status, service === 'task' ? (res.json as { error: { message: string } }).error.message : (res.json as { detail: string }).detail]).toEqual([method, 400, message]);
    }
    if (service !== 'task') {
      // which methods it serves is no more public than a path's
      const anonymous = await rawExchange(ports[service] as number, 'OPTIONS * HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n');
      expect([anonymous.status, anonymous.headers.allow]).toEqual([401, undefined]);
    }
  });
});

describe("the task service's WebSockets and a browser page's Origin", () => {
  const handshake = (origin: string | undefined, host = 'localhost') =>
    rawExchange(
      ports.task as number,
      `GET /ws/events HTTP/1.1\r\nHost: ${host}\r\n${origin ? `Origin: ${origin}\r\n` : ''}Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n`,
    );

  test('a page of another origin is refused with a 403 in the envelope; loopback, the service\'s own origin and no Origin connect', async () => {
    for (const origin of ['http://evil.example', 'null', 'http://127.0.0.1.evil.example']) {
      const refused = await handshake(origin);
      expect({ origin, status: refused.status, error: (refused.json as { error: unknown }).error }).toEqual({
        origin,
        status: 403,
        error: {
          code: 'FORBIDDEN',
          message: `WebSocket handshake is refused: Origin ${origin} may not connect; open the board from this service, or list the origin in ARMADA_CORS_ORIGINS (cors.origins)`,
          details: { origin: 'not allowed by the CORS origins' },
        },
      });
    }
    // rawExchange() waits for the connection to close: an accepted socket is closed here once its 101 is read
    const accepted = async (origin: string | undefined, host?: string) =>
      new Promise<string>((resolve, reject) => {
        const socket = net.connect(ports.task as number, '127.0.0.1', () =>
          socket.write(`GET /ws/events HTTP/1.1\r\nHost: ${host ?? 'localhost'}\r\n${origin ? `Origin: ${origin}\r\n` : ''}Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n`),
        );
        socket.once('data', (c: Buffer) => {
          socket.destroy();
          resolve(c.toString('latin1').split('\r\n')[0] as string);
        });
        socket.on('error', reject);
      });
    expect(await accepted(`http://127.0.0.1:${ports.task}`)).toBe('HTTP/1.1 101 Switching Protocols');
    expect(await accepted('http://localhost:5173')).toBe('HTTP/1.1 101 Switching Protocols');
    expect(await accepted('http://10.1.2.3:8887', '10.1.2.3:8887')).toBe('HTTP/1.1 101 Switching Protocols');
    expect(await accepted(undefined)).toBe('HTTP/1.1 101 Switching Protocols');
  });
});

test('a documented header sent on two lines is a 400 "must be sent once", not a type error of the joined value', async () => {
  const res = await rawExchange(ports.task as number, bodyless('task', 'GET', '/api/events/processes/00000000-0000-4000-8000-000000000000/logs', 'Last-Event-ID: 1\r\nLast-Event-ID: 2\r\n'));
  expect([res.status, (res.json as { error: unknown }).error]).toEqual([
    400,
    { code: 'VALIDATION_ERROR', message: 'Request headers are invalid: last-event-id must be sent once', details: { 'last-event-id': 'must be sent once' } },
  ]);
});

test('a path parameter past the router\'s limit: the 400 names the limit', async () => {
  const res = await rawExchange(ports.traces as number, bodyless('traces', 'GET', `/api/v1/traces/${'a'.repeat(1000)}`));
  expect([res.status, res.json]).toEqual([400, { detail: 'Request path is invalid: a path parameter is too long (at most 200 characters)' }]);
});

test('a scheduler source name with a control or bidi character is a 400, as a project name is; nothing is stored', async () => {
  const before = await count('scheduler_sources');
  for (const name of ['red\u001b[31m', 'bell\u0007', 'over\u202eride', 'c1\u0085']) {
    const res = await rawExchange(ports.scheduler as number, withBody('scheduler', 'POST', '/api/v1/sources', JSON.stringify({ name, source_type: 'langflow', url: 'http://127.0.0.1:9/x' })));
    expect([name, res.status, (res.json as { detail: string }).detail]).toEqual([name, 400, expect.stringMatching(/^Request body is invalid: name must match pattern /)]);
  }
  expect(await count('scheduler_sources')).toBe(before);
});

test('a date-time the document refuses is refused, and one it allows is stored: the pattern is the rule (traces sentAt)', async () => {
  const doc = (await rawExchange(ports.traces as number, bodyless('traces', 'GET', '/api/v1/openapi.json'))).json as { paths: Record<string, { post?: { requestBody: { content: Record<string, { schema: { properties: Record<string, { pattern?: string; format?: string }> } }> } } }> };
  const sentAt = doc.paths['/api/v1/traces']?.post?.requestBody.content['application/json']?.schema.properties.sentAt;
  expect(sentAt).toEqual(expect.objectContaining({ format: 'date-time', pattern: STORABLE_DATE_TIME_PATTERN }));
  const pattern = new RegExp(STORABLE_DATE_TIME_PATTERN);
  const ingest = (sent: string, n: number) =>
    rawExchange(ports.traces as number, withBody('traces', 'POST', '/api/v1/traces', JSON.stringify({ messageId: `dt-${n}`, instance: 'dt', to: '+15550102000', message: 'm', sentAt: sent })));
  let n = 0;
  for (const [sent, allowed] of [
    ['0001-01-01T00:00:00+00:01', false],
    ['0001-01-01T00:00:00+01:00', false],
    ['9999-12-31T23:59:59-00:01', false],
    ['2026-06-30T23:59:60Z', false],
    ['0000-12-31T23:00:00-02:00', false],
    ['0001-01-01T00:00:00Z', true],
    ['0001-01-01T00:00:00-05:00', true],
    ['0001-01-02T03:00:00+05:00', true],
    ['9999-12-31T23:59:59Z', true],
    ['9999-12-31T10:00:00+09:00', true],
  ] as const) {
    expect([sent, pattern.test(sent)]).toEqual([sent, allowed]);
    const res = await ingest(sent, n++);
    expect([sent, res.status]).toEqual([sent, allowed ? 201 : 400]);
    if (!allowed) expect((res.json as { detail: string }).detail).toBe('Request body is invalid: sentAt must match format "date-time"');
    else expect(Date.parse((res.json as { sentAt: string }).sentAt)).toBe(Date.parse(sent));
  }
});
