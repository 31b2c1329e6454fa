/**
 * Odd answers of a flow platform (docs/scheduler.md#platforms): a flow is sent at most once whatever its answer
 * holds, and what Armada keeps of a platform's answers is storable. Before, a run answer nested 5000 levels deep threw
 * a RangeError in JSON.stringify after it arrived; the try took it for an unreachable platform, gave the task back and
 * the flow was sent three times (`Task f failed: Maximum call stack size exceeded`).
 */
import { OPENAPI_PATHS } from '../../api/http/openapi';
import { MAX_PLATFORM_ANSWER_DEPTH, MAX_VERSION_INFO_CHARS } from '../../lib/scheduler/platforms';
import { FAKE_FLOWS, startFakeFlowBuilder, type FakeFlowBuilder } from '../support/fakeFlowBuilder';
import type { TestStack } from '../support/harness';
import { closeSchedulerStack, runWorkflowToEnd, schedulerInject, startSchedulerStack } from '../support/schedulerStack';

let stack: TestStack;
let fake: FakeFlowBuilder;
let inject: ReturnType<typeof schedulerInject>;

beforeAll(async () => {
  stack = await startSchedulerStack();
  fake = await startFakeFlowBuilder();
  inject = schedulerInject(stack);
  expect((await inject('POST', '/api/v1/sources', { name: 'odd', source_type: 'langflow', url: fake.url })).statusCode).toBe(201);
}, 120_000);
afterAll(async () => {
  await fake?.close();
  if (stack) await closeSchedulerStack(stack);
});

/** `{"outputs":[[…]]}` with `depth` levels of arrays and objects in all. */
const nested = (depth: number): string => `{"outputs":${'['.repeat(depth - 1)}${']'.repeat(depth - 1)}}`;
const runsSent = () => fake.requests.filter((r) => r.method === 'POST' && r.path.startsWith('/api/v1/run/')).length;

/** Creates workflow `name` with one flow task `f`, runs it with the fake answering `answer`: the execution and the POSTs it sent. */
async function runWithAnswer(name: string, answer: string) {
  expect((await inject('POST', '/api/v1/workflows', { name, tasks: [{ name: 'f', type: 'flow', source: 'odd', flow: FAKE_FLOWS.summarise.id }] })).statusCode).toBe(201);
  fake.rawAnswers.run = answer;
  const before = runsSent();
  try {
    const { execution } = await runWorkflowToEnd(stack, name);
    return { execution, sent: runsSent() - before };
  } finally {
    fake.rawAnswers.run = undefined;
  }
}

describe('a flow is sent once whatever its answer', () => {
  test.each([201, 2500, 3500, 5000])('an answer nested %i levels deep: one POST, the task fails saying so', async (depth) => {
    const { execution, sent } = await runWithAnswer(`deep-${depth}`, nested(depth));
    expect(sent).toBe(1);
    expect(execution.status).toBe('failed');
    expect(execution.tasks[0]?.error).toBe(
      `POST /api/v1/run/${FAKE_FLOWS.summarise.id} answered JSON nested more than ${MAX_PLATFORM_ANSWER_DEPTH} levels deep (HTTP 200); Armada reads a platform's answer up to that depth: check the source's URL, or have the flow return a flatter answer`,
    );
  }, 90_000);

  test(`an answer nested ${MAX_PLATFORM_ANSWER_DEPTH} levels deep is the task's output`, async () => {
    const answer = nested(MAX_PLATFORM_ANSWER_DEPTH);
    const { execution, sent } = await runWithAnswer('deep-max', answer);
    expect(sent).toBe(1);
    expect(execution.status).toBe('completed');
    expect(execution.tasks[0]?.output).toBe(answer);
  }, 90_000);

  test('an answer cut off while it is read: one POST, the task fails (the platform may have run the flow)', async () => {
    expect((await inject('POST', '/api/v1/workflows', { name: 'cut-answer', tasks: [{ name: 'f', type: 'flow', source: 'odd', flow: FAKE_FLOWS.summarise.id }] })).statusCode).toBe(201);
    fake.rawAnswers.runCut = JSON.stringify({ outputs: 'x'.repeat(256 * 1024) });
    const before = runsSent();
    try {
      const { execution } = await runWorkflowToEnd(stack, 'cut-answer');
      expect(runsSent() - before).toBe(1);
      expect(execution.status).toBe('failed');
      expect(execution.tasks[0]?.error).toContain(`POST /api/v1/run/${FAKE_FLOWS.summarise.id} failed while its answer was read`);
    } finally {
      fake.rawAnswers.runCut = undefined;
    }
  }, 90_000);
});

describe("a platform's version answer is stored bounded", () => {
  let other: FakeFlowBuilder;
  beforeAll(async () => {
    other = await startFakeFlowBuilder();
  });
  afterAll(async () => {
    await other?.close();
  });
  const sourceCount = async () => (await stack.db.query('SELECT count(*)::int AS n FROM scheduler_sources')).rows[0].n as number;

  test('nested 5000 levels deep: POST and PATCH of a source are a 400 Failed to validate source naming the depth, nothing stored', async () => {
    other.rawAnswers.version = nested(5000);
    const before = await sourceCount();
    const created = await inject('POST', '/api/v1/sources', { name: 'deep-version', source_type: 'langflow', url: other.url });
    expect(created.statusCode).toBe(400);
    expect(created.json()).toEqual({ detail: expect.stringMatching(/^Failed to validate source: GET \/api\/v1\/version answered JSON nested more than 200 levels deep/) });
    expect(await sourceCount()).toBe(before);

    const odd = (await inject('GET', '/api/v1/sources')).json().items.find((s: { name: string }) => s.name === 'odd');
    const patched = await inject('PATCH', `/api/v1/sources/${odd.id}`, { url: other.url });
    expect(patched.statusCode).toBe(400);
    expect(patched.json()).toEqual({ detail: expect.stringMatching(/^Failed to validate source: GET \/api\/v1\/version answered JSON nested more than 200 levels deep/) });
    expect((await inject('GET', `/api/v1/sources/${odd.id}`)).json().url).toBe(fake.url);
  });

  test(`more than ${MAX_VERSION_INFO_CHARS} characters of version information: a 400; up to ${MAX_PLATFORM_ANSWER_DEPTH} levels deep: stored`, async () => {
    other.rawAnswers.version = JSON.stringify({ version: '1.0', notes: 'n'.repeat(MAX_VERSION_INFO_CHARS) });
    const big = await inject('POST', '/api/v1/sources', { name: 'big-version', source_type: 'langflow', url: other.url });
    expect(big.statusCode).toBe(400);
    expect(big.json()).toEqual({ detail: expect.stringMatching(/^Failed to validate source: version endpoint answered \d+ characters of version information; Armada keeps at most 16384$/) });

    other.rawAnswers.version = nested(MAX_PLATFORM_ANSWER_DEPTH);
    const created = await inject('POST', '/api/v1/sources', { name: 'nested-version', source_type: 'langflow', url: other.url });
    expect(created.statusCode).toBe(201);
    expect(JSON.stringify(created.json().version_info)).toBe(nested(MAX_PLATFORM_ANSWER_DEPTH));
    expect(JSON.stringify((await inject('GET', `/api/v1/sources/${created.json().id}`)).json().version_info)).toBe(nested(MAX_PLATFORM_ANSWER_DEPTH));
    expect((await inject('DELETE', `/api/v1/sources/${created.json().id}`)).statusCode).toBe(200);
  });
});

describe("platform-provided text is read like a request's", () => {
  test('a __proto__ or constructor.prototype key in version information is dropped, in the answer and the row', async () => {
    const other = await startFakeFlowBuilder();
    try {
      other.rawAnswers.version = '{"version":"1.0","__proto__":{"polluted":true},"nested":{"constructor":{"prototype":{"x":1}},"ok":true}}';
      const created = await inject('POST', '/api/v1/sources', { name: 'proto-version', source_type: 'langflow', url: other.url });
      expect(created.statusCode).toBe(201);
      const expected = { version: '1.0', nested: { ok: true } };
      expect(created.json().version_info).toEqual(expected);
      expect(Object.keys(created.json().version_info)).not.toContain('__proto__');
      const row = await stack.db.query('SELECT version_info::text AS v FROM scheduler_sources WHERE id = $1', [created.json().id]);
      expect(JSON.parse(row.rows[0].v)).toEqual(expected);
      expect(row.rows[0].v).not.toContain('__proto__');
      expect(row.rows[0].v).not.toContain('constructor');
      expect((await inject('DELETE', `/api/v1/sources/${created.json().id}`)).statusCode).toBe(200);
    } finally {
      await other.close();
    }
  });

  test('NUL and unpaired surrogates in flow names and fields are U+FFFD in both flow lists', async () => {
    fake.rawAnswers.flows = String.raw`[{"id":"f\u00001","name":"N\u0000ul\ud800","endpoint_name":"e\udc00","description":"d\u0000","updated_at":null,"is_component":false}]`;
    try {
      const odd = (await inject('GET', '/api/v1/sources')).json().items.find((s: { name: string }) => s.name === 'odd');
      const expected = { id: 'f\ufffd1', name: 'N\ufffdul\ufffd', endpoint_name: 'e\ufffd', description: 'd\ufffd', updated_at: null };
      const own = await inject('GET', `/api/v1/sources/${odd.id}/flows`);
      expect(own.statusCode).toBe(200);
      expect(own.json().flows).toEqual([expected]);
      const all = await inject('GET', '/api/v1/flows');
      expect(all.statusCode).toBe(200);
      expect(all.json().flows.filter((f: { source_id: string }) => f.source_id === odd.id)).toEqual([expect.objectContaining(expected)]);
    } finally {
      fake.rawAnswers.flows = undefined;
    }
  });
});

describe('a platform that redirects to another origin', () => {
  // the platform answers 302 to `target` (a stand-in for a cloud's metadata address), with credentials, path and
  // query in the Location: nothing is sent there, and each answer names that origin alone and what to do
  let moved: FakeFlowBuilder;
  let target: FakeFlowBuilder;
  beforeAll(async () => {
    moved = await startFakeFlowBuilder();
    target = await startFakeFlowBuilder();
  });
  afterAll(async () => {
    await moved?.close();
    await target?.close();
  });

  test('a run, both flow lists, a new workflow, the health check and a new source fail saying why; the other origin is never asked', async () => {
    const created = await inject('POST', '/api/v1/sources', { name: 'moved', source_type: 'langflow', url: moved.url, api_key: 'moved-key-1234567890' });
    expect(created.statusCode).toBe(201);
    const id = created.json().id as string;
    expect((await inject('POST', '/api/v1/workflows', { name: 'redirected-run', tasks: [{ name: 'f', type: 'flow', source: 'moved', flow: FAKE_FLOWS.summarise.id }] })).statusCode).toBe(201);
    moved.redirectTo = `${target.url.replace('//', '//meta:s3cret-in-location@')}/latest/meta-data`;
    const refused = `a redirect to another origin (${target.url}), which is not followed: Armada calls a source's own origin (${moved.url}) only; if the platform has moved there, change the source's url`;

    const { execution } = await runWorkflowToEnd(stack, 'redirected-run');
    expect(execution.status).toBe('failed');
    expect(execution.tasks[0]?.error).toBe(`POST /api/v1/run/${FAKE_FLOWS.summarise.id} answered HTTP 302, ${refused}`);
    expect(moved.requests.filter((r) => r.method === 'POST')).toHaveLength(1); // an answer came: not sent again

    const own = await inject('GET', `/api/v1/sources/${id}/flows`);
    expect([own.statusCode, own.json()]).toEqual([502, { detail: `Failed to list flows: GET /api/v1/flows/ answered HTTP 302, ${refused}` }]);
    const newWorkflow = await inject('POST', '/api/v1/workflows', { name: 'redirected-new', tasks: [{ name: 'f', type: 'flow', source: 'moved', flow: FAKE_FLOWS.summarise.id }] });
    expect([newWorkflow.statusCode, newWorkflow.json()]).toEqual([
      502,
      { detail: `Task "f": could not list the flows of source "moved" to find "${FAKE_FLOWS.summarise.id}": GET /api/v1/flows/ answered HTTP 302, ${refused}` },
    ]);
    const all = (await inject('GET', '/api/v1/flows')).json();
    expect(all.sources.find((s: { id: string }) => s.id === id).error).toBe(`GET /api/v1/flows/ answered HTTP 302, ${refused}`);

    const health = await inject('POST', `/api/v1/sources/${id}/health`);
    expect(health.statusCode).toBe(200);
    expect(health.json()).toMatchObject({ healthy: false, status: 'inactive', error: `GET /health answered HTTP 302, ${refused}` });
    expect((await inject('GET', `/api/v1/sources/${id}`)).json()).toMatchObject({ status: 'inactive', last_health_error: `GET /health answered HTTP 302, ${refused}` });

    const before = (await stack.db.query('SELECT count(*)::int AS n FROM scheduler_sources')).rows[0].n;
    const another = await inject('POST', '/api/v1/sources', { name: 'moved-too', source_type: 'langflow', url: `${moved.url}/other` });
    expect([another.statusCode, another.json()]).toEqual([400, { detail: `Failed to validate source: GET /health answered HTTP 302, ${refused}` }]);
    expect((await stack.db.query('SELECT count(*)::int AS n FROM scheduler_sources')).rows[0].n).toBe(before);

    expect(target.requests).toEqual([]);
    const answered = [own.body, newWorkflow.body, JSON.stringify(all), health.body, another.body, JSON.stringify(execution)].join('\n');
    for (const hidden of ['s3cret-in-location', 'meta-data']) expect(answered).not.toContain(hidden);
    expect((await inject('DELETE', `/api/v1/sources/${id}`)).statusCode).toBe(200);
  }, 90_000);
});

describe('a platform that fails while a request waits on it: a 502, the platform\'s failure; the client\'s mistakes stay 4xx', () => {
  let failing: FakeFlowBuilder;
  let id: string;
  beforeAll(async () => {
    failing = await startFakeFlowBuilder();
    const created = await inject('POST', '/api/v1/sources', { name: 'failing', source_type: 'langflow', url: failing.url });
    expect(created.statusCode).toBe(201);
    id = created.json().id as string;
  });
  afterAll(async () => {
    await failing?.close();
  });
  const workflowRows = async () => (await stack.db.query("SELECT count(*)::int AS n FROM scheduler_workflows WHERE name = 'on-failing'")).rows[0].n as number;
  const create = (flow: string) => inject('POST', '/api/v1/workflows', { name: 'on-failing', tasks: [{ name: 'f', type: 'flow', source: 'failing', flow }] });

  test('an unknown flow is a 400; an answer of HTTP 500, then a refused connection, a 502 on both routes; nothing stored', async () => {
    const unknown = await create('no-such-flow');
    expect([unknown.statusCode, unknown.json().detail]).toEqual([400, expect.stringMatching(/^Task "f": source "failing" has no flow "no-such-flow"/)]);

    failing.mode = 'error';
    const answered = 'GET /api/v1/flows/ answered HTTP 500: {"detail":"internal error"}';
    const own = await inject('GET', `/api/v1/sources/${id}/flows`);
    expect([own.statusCode, own.json()]).toEqual([502, { detail: `Failed to list flows: ${answered}` }]);
    const created = await create('summarise');
    expect([created.statusCode, created.json()]).toEqual([502, { detail: `Task "f": could not list the flows of source "failing" to find "summarise": ${answered}` }]);

    await failing.stop();
    const refused = await create('summarise');
    expect([refused.statusCode, refused.json().detail]).toEqual([502, expect.stringMatching(/^Task "f": could not list the flows of source "failing" to find "summarise": GET \/api\/v1\/flows\/ failed: .*ECONNREFUSED/)]);
    expect(await workflowRows()).toBe(0);
    expect((await inject('GET', '/api/v1/workflows/on-failing')).statusCode).toBe(404);
  });

  test('the OpenAPI document names the 502 and the 504 (a timeout: test/unit/schedulerPlatformFailure.test.ts) of both routes', async () => {
    const doc = (await inject('GET', OPENAPI_PATHS.scheduler.json)).json();
    for (const op of [doc.paths['/api/v1/sources/{id}/flows'].get, doc.paths['/api/v1/workflows'].post]) {
      expect(Object.keys(op.responses)).toEqual(expect.arrayContaining(['400', '502', '504']));
    }
  });
});
