/**
 * Flow sources as the real platforms behave (issue 18): LangFlow's flow list and run identifiers, its error texts,
 * key validation at creation, one `Task <name> failed:` prefix for every failure, the flows of every source in one
 * list, and the automagik-hive / automagik-agents routes of their PyPI packages. Fakes are real loopback servers.
 */
import { startFakePlatforms, type FakePlatforms } from '../contract/fakePlatforms';
import { FAKE_FLOWS, startFakeFlowBuilder, type FakeFlowBuilder } from '../support/fakeFlowBuilder';
import { eventually, type TestStack } from '../support/harness';
import { schedulerInject, startSchedulerStack } from '../support/schedulerStack';

let stack: TestStack;
let fake: FakeFlowBuilder;
let platforms: FakePlatforms;
const LF_KEY = 'sk-langflow-right-key';
const uniq = Math.random().toString(36).slice(2, 8);

beforeAll(async () => {
  stack = await startSchedulerStack();
  fake = await startFakeFlowBuilder();
  fake.requiredKey = LF_KEY;
  platforms = await startFakePlatforms();
});
afterAll(async () => {
  await fake.close();
  await platforms.close();
  await stack.close();
});

const inject = (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: unknown) => schedulerInject(stack)(method, url, payload);

interface Execution {
  status: string;
  error: string | null;
  tasks: { name: string; status: string; error: string | null; output: string }[];
}

/** Runs the workflow and waits for its end; returns the execution and its log messages. */
async function runToEnd(workflow: string): Promise<{ execution: Execution; logs: { level: string; message: string }[] }> {
  const id = (await inject('POST', `/api/v1/workflows/${workflow}/run`)).json().executionId;
  const execution = await eventually(async () => {
    const e = (await inject('GET', `/api/v1/executions/${id}`)).json();
    return e.status !== 'running' && (e as Execution);
  }, 40_000);
  return { execution, logs: (await inject('GET', `/api/v1/executions/${id}/logs`)).json().logs };
}

let sourceId: string;

describe('LangFlow as users run it', () => {
  test('a wrong or missing key fails at source creation with the platform\'s words; the right key passes', async () => {
    const wrong = await inject('POST', '/api/v1/sources', { name: `lf-${uniq}`, source_type: 'langflow', url: fake.url, api_key: 'sk-wrong' });
    expect([wrong.statusCode, wrong.json()]).toEqual([
      400,
      { detail: 'Failed to validate source: the platform refused the API key: GET /api/v1/flows/ answered HTTP 403: {"detail":"Invalid API key"}' },
    ]);
    const none = await inject('POST', '/api/v1/sources', { name: `lf-${uniq}`, source_type: 'langflow', url: fake.url });
    expect([none.statusCode, none.json()]).toEqual([
      400,
      {
        detail:
          'Failed to validate source: the platform refused the request without an API key: GET /api/v1/flows/ answered HTTP 403: {"detail":"An API key must be passed as query or header"}',
      },
    ]);
    expect((await stack.db.query('SELECT count(*)::int AS n FROM scheduler_sources')).rows[0].n).toBe(0);

    const ok = await inject('POST', '/api/v1/sources', { name: `lf-${uniq}`, source_type: 'langflow', url: fake.url, api_key: LF_KEY });
    expect(ok.statusCode).toBe(201);
    sourceId = ok.json().id;
    // a PATCH to a wrong key is refused the same way and keeps the old key
    const patched = await inject('PATCH', `/api/v1/sources/${sourceId}`, { api_key: 'sk-also-wrong' });
    expect(patched.statusCode).toBe(400);
    expect(patched.json().detail).toContain('{"detail":"Invalid API key"}');
    expect((await inject('GET', `/api/v1/sources/${sourceId}/flows`)).statusCode).toBe(200);
  });

  test('the flow list asks for runnable flows only and shows every name a task may use', async () => {
    const r = await inject('GET', `/api/v1/sources/${sourceId}/flows`);
    expect(r.statusCode).toBe(200);
    const flows = r.json().flows;
    expect(flows.map((f: { name: string }) => f.name)).toEqual(['Summarise', 'Translate', 'Translate']); // no starter example, no component
    expect(flows[0]).toEqual({ ...FAKE_FLOWS.summarise, updated_at: '2026-01-02T03:04:05Z' });
    const asked = fake.requests.filter((q) => q.path === '/api/v1/flows/').at(-1);
    expect(asked).toMatchObject({ query: 'remove_example_flows=true&header_flows=true&get_all=true', apiKey: LF_KEY });
  });

  test('a flow task takes a display name, an endpoint_name or a UUID, resolved once at creation', async () => {
    const cases = [
      ['by-name', 'Summarise', FAKE_FLOWS.summarise],
      ['by-endpoint', 'translate-v2', FAKE_FLOWS.translateV2],
      ['by-id', FAKE_FLOWS.translate.id, FAKE_FLOWS.translate],
    ] as const;
    for (const [suffix, flow, expected] of cases) {
      const name = `${suffix}-${uniq}`;
      const created = await inject('POST', '/api/v1/workflows', { name, tasks: [{ name: 'lf', type: 'flow', source: `lf-${uniq}`, flow, input: 'hello' }] });
      expect(created.statusCode).toBe(201);
      const wf = (await inject('GET', `/api/v1/workflows/${name}`)).json();
      expect(wf.tasks[0]).toEqual({ name: 'lf', type: 'flow', source: sourceId, flow: expected.id, flowName: expected.name, input: 'hello' });
      const { execution } = await runToEnd(name);
      expect(execution.status).toBe('completed');
      expect(execution.tasks[0]?.output).toContain(`ran ${expected.name} with hello`);
    }
    // the runs named the flows by id: the platform never saw a display name
    const runs = fake.requests.filter((q) => q.method === 'POST').map((q) => q.path);
    expect(runs).toEqual(cases.map(([, , f]) => `/api/v1/run/${f.id}`));

    const none = await inject('POST', '/api/v1/workflows', { name: `none-${uniq}`, tasks: [{ name: 'lf', type: 'flow', source: sourceId, flow: 'Armada Echo' }] });
    expect([none.statusCode, none.json()]).toEqual([
      400,
      { detail: `Task "lf": source "lf-${uniq}" has no flow "Armada Echo" (give a flow's id, endpoint_name or name; GET /api/v1/sources/${sourceId}/flows lists them)` },
    ]);
    const several = await inject('POST', '/api/v1/workflows', { name: `several-${uniq}`, tasks: [{ name: 'lf', type: 'flow', source: sourceId, flow: 'Translate' }] });
    expect([several.statusCode, several.json()]).toEqual([
      409,
      { detail: `Task "lf": "Translate" names 2 flows on source "lf-${uniq}": ${FAKE_FLOWS.translate.id}, ${FAKE_FLOWS.translateV2.id} (translate-v2); give the id or endpoint_name` },
    ]);
    // two tasks on one source: the platform is asked for its flows once
    const listsBefore = fake.requests.filter((q) => q.path === '/api/v1/flows/').length;
    const two = await inject('POST', '/api/v1/workflows', {
      name: `two-${uniq}`,
      tasks: [
        { name: 'a', type: 'flow', source: sourceId, flow: 'summarise' },
        { name: 'b', type: 'flow', source: sourceId, flow: 'translate-v2' },
      ],
    });
    expect(two.statusCode).toBe(201);
    expect(fake.requests.filter((q) => q.path === '/api/v1/flows/').length - listsBefore).toBe(1);
    // an example flow is not runnable, so it cannot be named either
    const example = await inject('POST', '/api/v1/workflows', { name: `example-${uniq}`, tasks: [{ name: 'lf', type: 'flow', source: sourceId, flow: 'Basic Prompting' }] });
    expect(example.statusCode).toBe(400);
    expect((await stack.db.query('SELECT count(*)::int AS n FROM scheduler_workflows WHERE name = ANY($1)', [[`none-${uniq}`, `several-${uniq}`, `example-${uniq}`]])).rows[0].n).toBe(0);
  });

  test("the platform's error text reaches the task error and the log, with the Task prefix", async () => {
    const name = `revoked-${uniq}`;
    await inject('POST', '/api/v1/workflows', { name, tasks: [{ name: 'echo', type: 'flow', source: sourceId, flow: 'summarise' }] });
    fake.requiredKey = 'sk-rotated'; // the key was revoked on the platform after the source was created
    try {
      const { execution, logs } = await runToEnd(name);
      const expected = `Task echo failed: flow ${FAKE_FLOWS.summarise.id} answered HTTP 403: {"detail":"Invalid or missing API key"}`;
      expect(execution).toMatchObject({ status: 'failed', error: expected });
      expect(execution.tasks[0]).toMatchObject({ status: 'failed', error: `flow ${FAKE_FLOWS.summarise.id} answered HTTP 403: {"detail":"Invalid or missing API key"}` });
      expect(logs).toEqual(expect.arrayContaining([{ timestamp: expect.any(String), level: 'error', message: expected }]));
    } finally {
      fake.requiredKey = LF_KEY;
    }
  });

  test('a platform that refuses connections or times out fails the task with the same prefix, in the error and a log line', async () => {
    const refused = `refused-${uniq}`;
    const slow = `slow-${uniq}`;
    await inject('POST', '/api/v1/workflows', { name: refused, tasks: [{ name: 'echo', type: 'flow', source: sourceId, flow: 'summarise' }] });
    await inject('POST', '/api/v1/workflows', { name: slow, tasks: [{ name: 'echo', type: 'flow', source: sourceId, flow: 'summarise', timeout: 1 }] });

    await fake.stop();
    try {
      const { execution, logs } = await runToEnd(refused); // three attempts (2 s, 4 s apart), then it gives up
      const expected = `Task echo failed: POST /api/v1/run/${FAKE_FLOWS.summarise.id} failed: ECONNREFUSED`;
      expect(execution).toMatchObject({ status: 'failed', error: expected });
      expect(logs.filter((l) => l.message === expected).map((l) => l.level)).toEqual(['error']);
    } finally {
      await fake.start();
    }

    fake.runDelayMs = 3000;
    try {
      const before = fake.requests.filter((q) => q.method === 'POST').length;
      const { execution, logs } = await runToEnd(slow);
      const expected = `Task echo failed: POST /api/v1/run/${FAKE_FLOWS.summarise.id} timed out after 1000 ms`;
      expect(execution).toMatchObject({ status: 'failed', error: expected });
      expect(logs.filter((l) => l.message === expected).map((l) => l.level)).toEqual(['error']);
      // the platform got the request and may be running it: a timed-out run is not sent again
      expect(fake.requests.filter((q) => q.method === 'POST').length - before).toBe(1);
    } finally {
      fake.runDelayMs = 0;
    }
  });
});

describe('the flows of every source', () => {
  test('GET /api/v1/flows lists every source\'s flows naming the source; an unreachable source is reported, not fatal', async () => {
    const down = await startFakeFlowBuilder();
    const downSource = (await inject('POST', '/api/v1/sources', { name: `down-${uniq}`, source_type: 'flow-builder', url: down.url })).json();
    await down.close();
    const hive = (await inject('POST', '/api/v1/sources', { name: `hive-${uniq}`, source_type: 'automagik-hive', url: `${platforms.url}/automagik-hive/a`, api_key: 'hive-key' })).json();

    const r = await inject('GET', '/api/v1/flows');
    expect(r.statusCode).toBe(200);
    const body = r.json();
    expect(body.flows).toEqual(
      expect.arrayContaining([
        { source_id: sourceId, source_name: `lf-${uniq}`, source_type: 'langflow', ...FAKE_FLOWS.summarise, updated_at: '2026-01-02T03:04:05Z' },
        { source_id: hive.id, source_name: `hive-${uniq}`, source_type: 'automagik-hive', id: 'support-bot', name: 'Support Bot', endpoint_name: null, description: 'answers', updated_at: null },
      ]),
    );
    expect(body.flows).toHaveLength(5);
    expect(body.sources).toEqual(
      expect.arrayContaining([
        { id: sourceId, name: `lf-${uniq}`, source_type: 'langflow', status: 'active', flows: 3, error: null },
        { id: hive.id, name: `hive-${uniq}`, source_type: 'automagik-hive', status: 'active', flows: 2, error: null },
        { id: downSource.id, name: `down-${uniq}`, source_type: 'flow-builder', status: 'active', flows: 0, error: 'GET /api/v1/flows/ failed: ECONNREFUSED' },
      ]),
    );
    await inject('DELETE', `/api/v1/sources/${downSource.id}`);
  });
});

describe('automagik-hive and automagik-agents as their PyPI packages route', () => {
  test('hive: agents from GET /agents, runs as form fields with stream=false and the key as a bearer token', async () => {
    const name = `hive-run-${uniq}`;
    const created = await inject('POST', '/api/v1/workflows', { name, tasks: [{ name: 'bot', type: 'flow', source: `hive-${uniq}`, flow: 'Support Bot', input: 'hi there' }] });
    expect(created.statusCode).toBe(201);
    const { execution } = await runToEnd(name);
    expect(execution.status).toBe('completed');
    expect(execution.tasks[0]?.output).toContain('ran support-bot');
    const run = platforms.requests.find((q) => q.type === 'automagik-hive' && q.method === 'POST');
    expect(run).toMatchObject({ path: '/agents/support-bot/runs', contentType: 'application/x-www-form-urlencoded', authorization: 'Bearer hive-key' });
    expect(Object.fromEntries(new URLSearchParams(run?.body))).toEqual({ message: 'hi there', stream: 'false' });
  });

  test('hive 1.0 (AgentOS, no /api/v1/health): its /health (status ok) is asked when the spec\'s route answers 404', async () => {
    const src = await inject('POST', '/api/v1/sources', { name: `agentos-${uniq}`, source_type: 'automagik-hive', url: `${platforms.url}/automagik-hive-agentos/a` });
    expect(src.statusCode).toBe(201);
    const asked = platforms.requests.filter((q) => q.type === 'automagik-hive-agentos' && q.method === 'GET').map((q) => q.path);
    expect(asked.slice(0, 2)).toEqual(['/api/v1/health', '/health']);
    expect((await inject('POST', `/api/v1/sources/${src.json().id}/health`)).json()).toMatchObject({ healthy: true, error: null });
  });

  test('agents: version from GET /, agents from GET /api/v1/agents (the name is the id), runs with message_content', async () => {
    const src = await inject('POST', '/api/v1/sources', { name: `agents-${uniq}`, source_type: 'automagik-agents', url: `${platforms.url}/automagik-agents/a`, api_key: 'ag-key' });
    expect(src.statusCode).toBe(201);
    expect(src.json().version_info).toEqual({ version: '1.0.0', package: 'fake-automagik-agents' });
    expect((await inject('GET', `/api/v1/sources/${src.json().id}/flows`)).json().flows).toEqual([
      { id: 'simple', name: 'simple', endpoint_name: null, description: 'a simple agent', updated_at: null },
      { id: 'Flow one', name: 'Flow one', endpoint_name: null, description: '', updated_at: null },
    ]);
    const name = `agents-run-${uniq}`;
    expect((await inject('POST', '/api/v1/workflows', { name, tasks: [{ name: 'a', type: 'flow', source: src.json().id, flow: 'simple', input: 'go' }] })).statusCode).toBe(201);
    const { execution } = await runToEnd(name);
    expect(execution.status).toBe('completed');
    const run = platforms.requests.find((q) => q.type === 'automagik-agents' && q.method === 'POST');
    expect(run).toMatchObject({ path: '/api/v1/agent/simple/run', contentType: 'application/json' });
    expect(JSON.parse(run?.body ?? '{}')).toMatchObject({ message_content: 'go' });
  });
});
