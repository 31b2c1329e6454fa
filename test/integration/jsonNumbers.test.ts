/**
 * JSON numbers that do not survive parsing, sent to the real services (docs/security.md, "Numbers a double can
 * hold"): a nonzero number too small for a double (`1e-400`, `0.` + 400 zeros + `1`) parses to 0 and passed
 * `minimum: 0` as 0; it is a 400 naming it anywhere in any body, on every operation of every service. What is exactly
 * the value written is accepted where the schema allows it: `1.0` for an integer is 1, `-0` and `0e-999` are 0.
 * A 20-digit integer is above every documented maximum.
 */
import { OPENAPI_PATHS, type ServiceKind } from '../../api/http/openapi';
import { startTestStack, type TestStack } from '../support/harness';

type Json = Record<string, unknown>;
const SERVICES: ServiceKind[] = ['task', 'scheduler', 'agents', 'traces'];
const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'patch'];

let stack: TestStack;
const docs: Partial<Record<ServiceKind, Json>> = {};
const authHeaders = (service: ServiceKind): Record<string, string> => (service === 'task' ? {} : { 'x-api-key': stack.keys[service] });

beforeAll(async () => {
  stack = await startTestStack({ services: SERVICES });
  for (const service of SERVICES) {
    const res = await stack.app(service).inject({ method: 'GET', url: OPENAPI_PATHS[service].json, headers: authHeaders(service) });
    docs[service] = res.json();
  }
}, 120_000);
afterAll(async () => {
  await stack?.close();
});

const send = (service: ServiceKind, method: string, url: string, raw: string) =>
  stack.app(service).inject({ method: method as 'POST', url, payload: raw, headers: { ...authHeaders(service), 'content-type': 'application/json' } });

/** The message of an error body: `{detail}`, the envelope, or the code-hosting routes' `{success:false, error:"<code>", message}`. */
function messageOf(service: ServiceKind, body: Json): string {
  if (service !== 'task') return String(body.detail);
  return typeof body.error === 'string' ? String(body.message) : String((body.error as Json).message);
}

const UNDERFLOW = 'must be 0 or a number a double can hold (at least about ±4.9e-324): a smaller one would be read as 0';

/** The operations of a service's document that take a JSON body, with their path parameters filled. */
function withBody(service: ServiceKind): { method: string; url: string }[] {
  const out: { method: string; url: string }[] = [];
  for (const [path, item] of Object.entries((docs[service] as Json).paths as Record<string, Json>)) {
    for (const [method, op] of Object.entries(item)) {
      if (HTTP_METHODS.includes(method) && (op as Json).requestBody) out.push({ method: method.toUpperCase(), url: path.replace(/\{[^}]+\}/g, 'x') });
    }
  }
  return out;
}

test.each(SERVICES)('%s: a nonzero number too small for a double is a 400 naming it, on every operation with a body', async (service) => {
  const ops = withBody(service);
  expect(ops.length).toBeGreaterThan(0);
  const failures: string[] = [];
  for (const { method, url } of ops) {
    for (const [raw, field] of [
      ['{"x":{"y":[1,1e-400]}}', 'x.y.1'],
      [`{"n":-0.${'0'.repeat(400)}1}`, 'n'],
      ['{"a\\"b":{"s":"1e-400","t":2E-400}}', 'a"b.t'],
      ['1e-999', 'body'],
    ] as const) {
      const res = await send(service, method, url, raw);
      const body = res.json() as Json;
      const expected = `Request body is invalid: ${field} ${UNDERFLOW}`;
      if (res.statusCode !== 400 || messageOf(service, body) !== expected) failures.push(`${method} ${url} ${raw.slice(0, 40)} → ${res.statusCode} ${res.body.slice(0, 200)}`);
      else if (service === 'task' && typeof body.error === 'object' && JSON.stringify((body.error as Json).details) !== JSON.stringify({ [field]: UNDERFLOW })) failures.push(`${method} ${url}: details ${res.body.slice(0, 200)}`);
    }
  }
  expect(failures).toEqual([]);
}, 120_000);

describe('task templates: integer and bounded number fields', () => {
  const template = (task: string) => `{"name":"numbers","description":"","category":"c","tasks":[{"title":"t","description":"",${task}}]}`;
  const count = async () => (await stack.db.query<{ n: number }>('SELECT count(*)::int AS n FROM task_templates')).rows[0]?.n;

  test('1e-400 for order (an integer) or estimatedTime (minimum 0) is refused, not stored as 0; nothing is written', async () => {
    const before = await count();
    for (const [task, field] of [
      ['"order":1e-400', 'tasks.0.order'],
      ['"order":-1e-400', 'tasks.0.order'],
      ['"order":0,"estimatedTime":1e-400', 'tasks.0.estimatedTime'],
    ] as const) {
      const res = await send('task', 'POST', '/api/task-templates', template(task));
      expect([task, res.statusCode, res.json().error]).toEqual([task, 400, { code: 'VALIDATION_ERROR', message: `Request body is invalid: ${field} ${UNDERFLOW}`, details: { [field]: UNDERFLOW } }]);
      expect(res.body).not.toMatch(/\bat .*\.(ts|js):\d+/);
    }
    // beyond the documented maximum (a 20-digit integer reads as 12345678901234567000): the schema's 400
    const big = await send('task', 'POST', '/api/task-templates', template('"order":12345678901234567890'));
    expect([big.statusCode, big.json().error.details]).toEqual([400, { 'tasks.0.order': 'must be <= 2147483647' }]);
    expect(await count()).toBe(before);
  });

  test('what is exactly the value written is accepted: 1.0 is the integer 1, -0 and 0e-999 are 0, 1e-300 is itself', async () => {
    for (const [task, stored] of [
      ['"order":1.0,"estimatedTime":1e-300', { order: 1, estimatedTime: 1e-300 }],
      ['"order":-0,"estimatedTime":0e-999', { order: 0, estimatedTime: 0 }],
      ['"order":2147483647.0,"estimatedTime":-0.0', { order: 2147483647, estimatedTime: 0 }],
    ] as const) {
      const res = await send('task', 'POST', '/api/task-templates', template(task));
      expect([task, res.statusCode]).toEqual([task, 200]);
      const read = await stack.app('task').inject({ method: 'GET', url: `/api/task-templates/${res.json().data.id}` });
      expect(read.json().data.tasks[0]).toMatchObject(stored);
    }
  });
});

test('agents: free-form metadata is stored as sent; a too-small number deep in it is refused and nothing is stored', async () => {
  const key = { 'x-api-key': stack.keys.agents, 'content-type': 'application/json' };
  const count = async () => (await stack.db.query<{ n: number }>('SELECT count(*)::int AS n FROM agent_memory')).rows[0]?.n;
  const before = await count();
  const refused = await stack.app('agents').inject({ method: 'POST', url: '/api/v1/memory', headers: key, payload: '{"content":"tiny","metadata":{"a":[{"b":1e-400}]}}' });
  expect([refused.statusCode, refused.json()]).toEqual([400, { detail: `Request body is invalid: metadata.a.0.b ${UNDERFLOW}` }]);
  expect(await count()).toBe(before);
  // a string that reads like one, a key holding "e-", an exact zero with a large negative exponent: all fine
  const stored = await stack.app('agents').inject({ method: 'POST', url: '/api/v1/memory', headers: key, payload: '{"content":"tiny","metadata":{"s":"1e-400","k\\"e-y":1e-5,"zero":0.0e-999}}' });
  expect([stored.statusCode, stored.json().metadata]).toEqual([201, { s: '1e-400', 'k"e-y': 1e-5, zero: 0 }]);
  expect(await count()).toBe((before ?? 0) + 1);
});
