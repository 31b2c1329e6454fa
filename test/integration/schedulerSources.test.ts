import crypto from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { workerIdentity } from '../../lib/workerIdentity';
import { createSchedulerActivities } from '../../activities/scheduler/schedulerActivities';
import { openSecret } from '../../lib/secretBox';
import { lockSourceKeys } from '../../lib/db/schedulerSources';
import { insertWorkflow } from '../../lib/db/schedulerWorkflows';
import { FAKE_FLOWS, startFakeFlowBuilder, type FakeFlowBuilder } from '../support/fakeFlowBuilder';
import { eventually, logger, startTestStack, type TestStack } from '../support/harness';

let stack: TestStack;
let fake: FakeFlowBuilder;
const KEY = 'test-api-key-0123456789';

beforeAll(async () => {
  stack = await startTestStack({ services: ['scheduler'], file: { scheduler: { healthCheckIntervalSeconds: 0 } } });
  fake = await startFakeFlowBuilder();
});
afterAll(async () => {
  await fake.close();
  await stack.close();
});
beforeEach(() => {
  fake.mode = 'ok';
});

const inject = (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: unknown, headers: Record<string, string> = { 'x-api-key': KEY }) =>
  stack.app('scheduler').inject({ method, url, payload: payload as object, headers });

describe('scheduler sources', () => {
  test('creation validates the platform, stores the key sealed and never returns it', async () => {
    const created = await inject('POST', '/api/v1/sources', { name: 'fb', source_type: 'flow-builder', url: `${fake.url}/`, api_key: 'platform-secret-1' });
    expect(created.statusCode).toBe(201);
    const s = created.json();
    expect(s).toMatchObject({ name: 'fb', source_type: 'flow-builder', url: fake.url, status: 'active', has_api_key: true });
    expect(s.version_info).toEqual({ version: '1.4.2', package: 'fake-flow-builder' });
    expect(JSON.stringify(s)).not.toContain('platform-secret-1');
    expect(fake.requests.find((r) => r.path === '/health')?.apiKey).toBe('platform-secret-1');

    const row = await stack.db.query('SELECT api_key_sealed FROM scheduler_sources WHERE id = $1', [s.id]);
    const sealed: string = row.rows[0].api_key_sealed;
    expect(sealed).toMatch(/^v1:/);
    expect(sealed).not.toContain('platform-secret-1');
    expect(openSecret(stack.keys.encryption, sealed)).toBe('platform-secret-1');

    const got = await inject('GET', `/api/v1/sources/${s.id}`);
    expect(got.statusCode).toBe(200);
    expect(got.body).not.toContain('platform-secret-1');

    // a key no HTTP header can carry is refused by the schema (400 naming api_key), never sent to the platform
    const before = fake.requests.length;
    for (const api_key of ['line\nbreak', 'naïve', 'with space']) {
      const bad = await inject('PATCH', `/api/v1/sources/${s.id}`, { api_key });
      expect(bad.statusCode).toBe(400);
      expect(bad.json().detail).toMatch(/api_key/);
    }
    expect(fake.requests.length).toBe(before);

    // duplicate URL, with or without the trailing slash
    const dup = await inject('POST', '/api/v1/sources', { source_type: 'flow-builder', url: fake.url });
    expect(dup.statusCode).toBe(400);
    expect(dup.json()).toEqual({ detail: `Source with URL ${fake.url} already exists` });

    // remote flows
    const flows = await inject('GET', `/api/v1/sources/${s.id}/flows`);
    expect(flows.statusCode).toBe(200);
    // only runnable flows (no starter examples, no saved components), with what a task may name them by
    expect(flows.json()).toEqual({
      source_id: s.id,
      flows: [FAKE_FLOWS.summarise, FAKE_FLOWS.translate, FAKE_FLOWS.translateV2].map((f) => ({ ...f, updated_at: '2026-01-02T03:04:05Z' })),
    });
    expect(fake.requests.filter((r) => r.path === '/api/v1/flows/').at(-1)?.query).toBe('remove_example_flows=true&header_flows=true&get_all=true');
    await inject('DELETE', `/api/v1/sources/${s.id}`);
  });

  test.each([
    ['down', 'down', /^Failed to validate source: GET \/health failed: ECONNREFUSED$/],
    ['HTTP 500', 'error', /^Failed to validate source: health check answered HTTP 500: \{"detail":"internal error"\}$/],
    ['status: bad', 'bad', /^Failed to validate source: health check answered status "bad", expected "ok"$/],
  ])('creation fails with the detail and its short cause when the platform is %s', async (_label, mode, detail) => {
    const other = await startFakeFlowBuilder();
    if (mode === 'down') await other.stop();
    else other.mode = mode as 'error' | 'bad';
    const r = await inject('POST', '/api/v1/sources', { source_type: 'flow-builder', url: other.url, api_key: 'k' });
    expect(r.statusCode).toBe(400);
    expect(r.json()).toEqual({ detail: expect.stringMatching(detail) });
    const n = await stack.db.query('SELECT count(*)::int AS n FROM scheduler_sources WHERE url = $1', [other.url]);
    expect(n.rows[0].n).toBe(0);
    await other.close();
  });

  test('generated name, list with filter and pagination, patch, 404s', async () => {
    const fakes = [await startFakeFlowBuilder(), await startFakeFlowBuilder(), await startFakeFlowBuilder()];
    const ids: string[] = [];
    for (const f of fakes) {
      const r = await inject('POST', '/api/v1/sources', { source_type: 'langflow', url: f.url });
      expect(r.statusCode).toBe(201);
      expect(r.json().name).toMatch(/^langflow-[0-9a-f]{8}$/);
      expect(r.json().has_api_key).toBe(false);
      ids.push(r.json().id);
    }
    const patched = await inject('PATCH', `/api/v1/sources/${ids[0]}`, { status: 'inactive', name: 'renamed' });
    expect(patched.statusCode).toBe(200);
    expect(patched.json()).toMatchObject({ status: 'inactive', name: 'renamed' });

    const page = await inject('GET', '/api/v1/sources?limit=2&offset=0');
    expect(page.statusCode).toBe(200);
    expect(page.json()).toMatchObject({ limit: 2, offset: 0, has_more: true });
    expect(page.json().items).toHaveLength(2);
    const inactive = await inject('GET', '/api/v1/sources?status=inactive');
    expect(inactive.json().items.map((x: { id: string }) => x.id)).toEqual([ids[0]]);
    expect(inactive.json()).toMatchObject({ total: 1, has_more: false, limit: 50, offset: 0 });

    // a url change is validated against the new platform
    const down = await startFakeFlowBuilder();
    await down.stop();
    const bad = await inject('PATCH', `/api/v1/sources/${ids[1]}`, { url: down.url });
    expect(bad.json()).toEqual({ detail: 'Failed to validate source: GET /health failed: ECONNREFUSED' });
    const taken = await inject('PATCH', `/api/v1/sources/${ids[1]}`, { url: `${fakes[2]?.url}/` });
    expect(taken.json()).toEqual({ detail: `Source with URL ${fakes[2]?.url} already exists` });

    for (const bad of ['limit=0', 'limit=101', 'offset=-1', 'status=weird', 'limit=abc']) {
      const r = await inject('GET', `/api/v1/sources?${bad}`);
      expect(r.statusCode).toBe(400);
      expect(typeof r.json().detail).toBe('string');
    }
    for (const id of ['7c0e4f5e-0000-4000-8000-000000000000', 'not-a-uuid']) {
      for (const [m, u] of [['GET', ''], ['PATCH', ''], ['DELETE', ''], ['GET', '/flows'], ['POST', '/health']] as const) {
        const r = await inject(m, `/api/v1/sources/${id}${u}`, m === 'PATCH' ? { name: 'x' } : undefined);
        expect([r.statusCode, r.json()]).toEqual([404, { detail: 'Source not found' }]);
      }
    }
    for (const f of fakes) await f.close();
  });

  test('bad input and auth', async () => {
    const noKey = await inject('GET', '/api/v1/sources', undefined, {});
    expect([noKey.statusCode, noKey.json()]).toEqual([401, { detail: 'Invalid API key' }]);
    const wrong = await inject('POST', '/api/v1/sources', { source_type: 'flow-builder', url: fake.url }, { 'x-api-key': 'nope' });
    expect([wrong.statusCode, wrong.json()]).toEqual([401, { detail: 'Invalid API key' }]);
    const badJson = await stack.app('scheduler').inject({
      method: 'POST',
      url: '/api/v1/sources',
      headers: { 'x-api-key': KEY, 'content-type': 'application/json' },
      payload: '{"source_type": ',
    });
    expect([badJson.statusCode, badJson.json()]).toEqual([400, { detail: 'Malformed JSON in request body' }]);
    const zipped = await stack.app('scheduler').inject({
      method: 'POST',
      url: '/api/v1/sources',
      headers: { 'x-api-key': KEY, 'content-type': 'application/json', 'content-encoding': 'gzip' },
      payload: gzipSync(JSON.stringify({ source_type: 'flow-builder', url: fake.url })),
    });
    expect([zipped.statusCode, zipped.headers['accept-encoding'], zipped.json()]).toEqual([
      415,
      'identity',
      { detail: 'Content-Encoding gzip is not supported: send the request body uncompressed (no Content-Encoding header)' },
    ]);
    const badType = await inject('POST', '/api/v1/sources', { source_type: 'zapier', url: fake.url });
    expect(badType.statusCode).toBe(400);
    expect(badType.json().detail).toContain('source_type');
    const badUrl = await inject('POST', '/api/v1/sources', { source_type: 'flow-builder', url: 'ftp://x' });
    expect(badUrl.statusCode).toBe(400);
    const wrongTypes = await inject('POST', '/api/v1/sources', { source_type: 'flow-builder', url: 42 });
    expect(wrongTypes.statusCode).toBe(400);
    expect((await inject('GET', '/health', undefined, {})).statusCode).toBe(200);
  });

  test('a URL with a user name or password, or a query or fragment, is a 400 naming url and saying to give the key in api_key; nothing is stored or sent, the password is in no answer', async () => {
    const f = await startFakeFlowBuilder();
    try {
      const count = async () => (await stack.db.query<{ n: number }>('SELECT count(*)::int AS n FROM scheduler_sources')).rows[0]?.n;
      const before = await count();
      const host = f.url.replace(/^http:\/\//, '');
      const withCredentials = [`http://me:pass-word-1@${host}`, `http://token-value-2@${host}/`, `http://:pass-word-3@${host}/api`, `http://a@b:pass-word-4@${host}`];
      const detail =
        'Request body is invalid: url must be an http(s) URL without a user name or password before the host (such as https://langflow.example.com; give the key in api_key) and without a query (?) or fragment (#)';
      // a query or fragment: every call put its path after it (`?k=v/health`), so every call failed (until session 53)
      withCredentials.push(`${f.url}/?token=abc`, `${f.url}?a=1`, `${f.url}/api#top`);
      const created = await inject('POST', '/api/v1/sources', { source_type: 'langflow', url: f.url });
      expect(created.statusCode).toBe(201);
      const id = created.json().id as string;
      const requestsBefore = f.requests.length;
      for (const url of withCredentials) {
        const post = await inject('POST', '/api/v1/sources', { source_type: 'langflow', url, api_key: 'k-123456' });
        const patch = await inject('PATCH', `/api/v1/sources/${id}`, { url });
        for (const r of [post, patch]) {
          expect([url, r.statusCode, r.json().detail]).toEqual([url, 400, detail]);
          expect(r.body).not.toMatch(/pass-word|token-value/);
        }
      }
      // none of them was sent to the platform
      expect(f.requests.length).toBe(requestsBefore);
      // an @ after the host is no user name: a path may hold one (the platform is asked, at that path)
      const atInPath = await inject('PATCH', `/api/v1/sources/${id}`, { url: `${f.url}/team@example` });
      expect(atInPath.body).not.toContain('user name or password');
      expect(f.requests.slice(requestsBefore).map((r) => r.path)[0]).toMatch(/^\/team@example\//);
      expect(await count()).toBe((before ?? 0) + 1);
      expect((await inject('GET', `/api/v1/sources/${id}`)).json().url).not.toMatch(/pass-word|token-value/);
      // the OpenAPI document says so, pattern and words
      const doc = JSON.stringify((await inject('GET', '/api/v1/openapi.json')).json());
      expect(doc).toContain('"pattern":"^https?://[^\\\\s/?#@]+(/[^\\\\s?#]*)?$"');
      expect(doc).toContain('without a user name or password before the host');
      expect((await inject('DELETE', `/api/v1/sources/${id}`)).statusCode).toBe(200);
    } finally {
      await f.close();
    }
  });

  test('a blank (white space only) source name, workflow task name or flow task source is a 400 naming it; nothing is stored', async () => {
    const f = await startFakeFlowBuilder();
    try {
      const count = async () =>
        (await stack.db.query<{ s: number; w: number }>('SELECT (SELECT count(*) FROM scheduler_sources)::int AS s, (SELECT count(*) FROM scheduler_workflows)::int AS w')).rows[0];
      const before = await count();
      const blanks = [' ', '\t\n', '\u00a0\u3000'];
      for (const name of blanks) {
        const created = await inject('POST', '/api/v1/sources', { name, source_type: 'langflow', url: f.url });
        expect([JSON.stringify(name), created.statusCode]).toEqual([JSON.stringify(name), 400]);
        expect(created.json().detail).toMatch(/^Request body is invalid: name /);
      }
      const named = await inject('POST', '/api/v1/sources', { name: ' padded ', source_type: 'langflow', url: f.url });
      expect([named.statusCode, named.json().name]).toEqual([201, ' padded ']);
      for (const name of blanks) {
        const patched = await inject('PATCH', `/api/v1/sources/${named.json().id}`, { name });
        expect([JSON.stringify(name), patched.statusCode]).toEqual([JSON.stringify(name), 400]);
        expect(patched.json().detail).toMatch(/^Request body is invalid: name /);
      }
      expect((await inject('GET', `/api/v1/sources/${named.json().id}`)).json().name).toBe(' padded ');
      for (const name of blanks) {
        const script = await inject('POST', '/api/v1/workflows', { name: 'blank-task', tasks: [{ name, type: 'script', script: 'true' }] });
        expect([JSON.stringify(name), script.statusCode]).toEqual([JSON.stringify(name), 400]);
        expect(script.json().detail).toMatch(/^Request body is invalid: tasks\.0\.name /);
        const flow = await inject('POST', '/api/v1/workflows', { name: 'blank-source', tasks: [{ name: 'f', type: 'flow', source: name, flow: 'x' }] });
        expect([JSON.stringify(name), flow.statusCode]).toEqual([JSON.stringify(name), 400]);
        expect(flow.json().detail).toMatch(/^Request body is invalid: tasks\.0\.source /);
      }
      expect(await count()).toEqual({ s: (before?.s ?? 0) + 1, w: before?.w });
      expect((await inject('DELETE', `/api/v1/sources/${named.json().id}`)).statusCode).toBe(200);
    } finally {
      await f.close();
    }
  });

  test('delete removes the source, its workflows and schedules in one go', async () => {
    const f = await startFakeFlowBuilder();
    const s = (await inject('POST', '/api/v1/sources', { name: 'doomed', source_type: 'flow-builder', url: f.url })).json();
    const wf = await inject('POST', '/api/v1/workflows', {
      name: 'uses-doomed',
      schedule: '0 3 * * *',
      timezone: 'Europe/Paris',
      tasks: [{ name: 'f', type: 'flow', source: 'doomed', flow: 'summarise', input: 'hi' }],
    });
    expect(wf.json()).toEqual({ name: 'uses-doomed', status: 'created', nextRun: expect.any(String) });
    expect(wf.statusCode).toBe(201);
    const other = await inject('POST', '/api/v1/workflows', { name: 'unrelated', tasks: [{ name: 's', type: 'script', script: 'echo hi' }] });
    expect(other.statusCode).toBe(201);
    const client = await stack.temporal.client();
    expect((await client.schedule.getHandle('schedule:uses-doomed').describe()).scheduleId).toBe('schedule:uses-doomed');

    const del = await inject('DELETE', `/api/v1/sources/${s.id}`);
    expect(del.statusCode).toBe(200);
    expect(del.json()).toEqual({ id: s.id, deleted: true, deleted_workflows: ['uses-doomed'] });
    expect((await inject('GET', `/api/v1/sources/${s.id}`)).statusCode).toBe(404);
    const rows = await stack.db.query(`SELECT name FROM scheduler_workflows ORDER BY name`);
    expect(rows.rows.map((r) => r.name)).toEqual(['unrelated']);
    await expect(client.schedule.getHandle('schedule:uses-doomed').describe()).rejects.toThrow();
    await inject('DELETE', '/api/v1/workflows/unrelated');
    await f.close();
  });

  const lockWaits = async () =>
    (await stack.db.query("SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'")).rowCount;

  test('a workflow created while its source is being deleted is a 400 naming the source and leaves no workflow (it was a 500: its row failed the foreign key)', async () => {
    const f = await startFakeFlowBuilder();
    const s = (await inject('POST', '/api/v1/sources', { name: 'vanishing', source_type: 'flow-builder', url: f.url })).json();
    const deleting = await stack.db.connect();
    try {
      // the delete is under way (its transaction holds the row) when the route resolves the flow task, and commits after
      await deleting.query('BEGIN');
      await deleting.query('DELETE FROM scheduler_sources WHERE id = $1', [s.id]);
      const answer = inject('POST', '/api/v1/workflows', { name: 'uses-vanishing', tasks: [{ name: 'f', type: 'flow', source: s.id, flow: 'summarise' }] });
      await eventually(lockWaits);
      await deleting.query('COMMIT');
      const res = await answer;
      expect([res.statusCode, res.json()]).toEqual([400, { detail: `Task "f" names an unknown source "${s.id}": it was deleted while the workflow was being created` }]);
    } finally {
      await deleting.query('ROLLBACK'); // a no-op after the COMMIT
      deleting.release();
      await f.close();
    }
    expect((await stack.db.query("SELECT 1 FROM scheduler_workflows WHERE name = 'uses-vanishing'")).rowCount).toBe(0);
  });

  test("a source's delete waits for a workflow being created with it, and deletes that workflow too", async () => {
    const f = await startFakeFlowBuilder();
    const s = (await inject('POST', '/api/v1/sources', { name: 'contested', source_type: 'flow-builder', url: f.url })).json();
    const creating = await stack.db.connect();
    try {
      // what the create route's transaction holds until it commits: the source's key-share lock, then the rows
      await creating.query('BEGIN');
      expect(await lockSourceKeys(creating, [s.id])).toEqual([]);
      await insertWorkflow(creating, {
        name: 'uses-contested',
        description: '',
        schedule: null,
        timezone: 'UTC',
        jitterMs: 0,
        enabled: true,
        tasks: [{ name: 'f', type: 'flow', source: s.id, flow: 'summarise' }],
        defaultSchedule: { id: crypto.randomUUID(), temporalId: 'schedule:uses-contested' },
      });
      const answer = inject('DELETE', `/api/v1/sources/${s.id}`);
      await eventually(lockWaits);
      await creating.query('COMMIT');
      const del = await answer;
      expect([del.statusCode, del.json()]).toEqual([200, { id: s.id, deleted: true, deleted_workflows: ['uses-contested'] }]);
    } finally {
      await creating.query('ROLLBACK'); // a no-op after the COMMIT
      creating.release();
      await f.close();
    }
    // before, the delete had read the workflows using the source first: this one was left, naming a source that is gone
    expect((await stack.db.query("SELECT 1 FROM scheduler_workflows WHERE name = 'uses-contested'")).rowCount).toBe(0);
  });

  test('a workflow created while its source moves to a platform lacking its flow: the PATCH waits for it and sees it (409), or it finds the source moved and is refused (409)', async () => {
    const [current, lacking] = [await startFakeFlowBuilder(), await startFakeFlowBuilder()];
    lacking.withoutFlows = [FAKE_FLOWS.summarise.id];
    const s = (await inject('POST', '/api/v1/sources', { name: 'moving', source_type: 'flow-builder', url: current.url })).json();
    const create = (name: string) => inject('POST', '/api/v1/workflows', { name, tasks: [{ name: 'sum', type: 'flow', source: s.id, flow: 'summarise' }] });
    const holder = await stack.db.connect();
    let release = (): void => undefined;
    try {
      // the creation's transaction first: it holds the source's key-share lock, and is held here at its insert by an
      // uncommitted row of the same name, when the PATCH comes; the PATCH waits for its commit and then sees its task
      await holder.query('BEGIN');
      await insertWorkflow(holder, {
        name: 'made-before-move',
        description: '',
        schedule: null,
        timezone: 'UTC',
        jitterMs: 0,
        enabled: true,
        tasks: [{ name: 's', type: 'script', script: 'true' }],
        defaultSchedule: { id: crypto.randomUUID(), temporalId: 'schedule:made-before-move' },
      });
      const created = create('made-before-move');
      await eventually(lockWaits);
      const patched = inject('PATCH', `/api/v1/sources/${s.id}`, { url: lacking.url });
      await eventually(async () => ((await lockWaits()) ?? 0) >= 2); // the PATCH waits on the source's row
      await holder.query('ROLLBACK');
      expect((await created).statusCode).toBe(201);
      const refused = await patched;
      expect([refused.statusCode, refused.json().detail]).toEqual([409, expect.stringContaining(`workflow made-before-move task "sum" runs flow ${FAKE_FLOWS.summarise.id}`)]);
      expect((await inject('GET', `/api/v1/sources/${s.id}`)).json().url).toBe(current.url);
      expect((await inject('DELETE', '/api/v1/workflows/made-before-move')).statusCode).toBe(200);

      // the PATCH first: the creation's flows are looked up on the old platform (held there) while the PATCH, finding
      // no workflow on the source, moves it; the creation's transaction then finds the source moved and stores nothing
      const listed = () => current.requests.filter((r) => r.path === '/api/v1/flows/').length;
      const before = listed();
      current.flowsHeld = new Promise<void>((resolve) => {
        release = resolve;
      });
      const creating = create('made-while-moving');
      await eventually(async () => listed() > before);
      const moved = await inject('PATCH', `/api/v1/sources/${s.id}`, { url: lacking.url });
      expect([moved.statusCode, moved.json().url]).toEqual([200, lacking.url]);
      release();
      const late = await creating;
      expect([late.statusCode, late.json()]).toEqual([
        409,
        {
          detail:
            'Task "sum": source "moving" was changed (its url, source_type or api_key) while the workflow was being created, after its flows were looked up on the platform it named before; nothing was created: send the request again',
        },
      ]);
      expect((await inject('GET', '/api/v1/workflows/made-while-moving')).statusCode).toBe(404);
      // sent again, its flow is looked up on the platform the source names now, which lacks it
      const again = await create('made-while-moving');
      expect([again.statusCode, again.json().detail]).toEqual([400, expect.stringContaining('has no flow "summarise"')]);
    } finally {
      release();
      await holder.query('ROLLBACK'); // a no-op after the one above
      holder.release();
      await inject('DELETE', `/api/v1/sources/${s.id}`); // and its workflows
      for (const f of [current, lacking]) await f.close();
    }
  });

  test('the periodic health check turns a failing source inactive and back', async () => {
    const f = await startFakeFlowBuilder();
    const s = (await inject('POST', '/api/v1/sources', { name: 'flaky', source_type: 'flow-builder', url: f.url })).json();
    const acts = createSchedulerActivities({ db: stack.db, config: stack.config, logger, metrics: stack.metrics, worker: workerIdentity('test') });
    f.mode = 'bad';
    await acts.checkSourcesHealth();
    let row = (await inject('GET', `/api/v1/sources/${s.id}`)).json();
    expect(row.status).toBe('inactive');
    expect(row.last_health_error).toContain('"bad"');
    const metrics = await stack.metrics.registry.getSingleMetricAsString('armada_scheduler_source_healthy');
    expect(metrics).toContain('armada_scheduler_source_healthy{source="flaky",source_type="flow-builder"} 0');
    f.mode = 'ok';
    await acts.checkSourcesHealth();
    row = (await inject('GET', `/api/v1/sources/${s.id}`)).json();
    expect(row.status).toBe('active');
    // a source the user switched off stays off
    await inject('PATCH', `/api/v1/sources/${s.id}`, { status: 'inactive' });
    await acts.checkSourcesHealth();
    expect((await inject('GET', `/api/v1/sources/${s.id}`)).json().status).toBe('inactive');
    const now = await inject('POST', `/api/v1/sources/${s.id}/health`);
    expect(now.json()).toMatchObject({ id: s.id, healthy: true, status: 'inactive', error: null });
    await inject('DELETE', `/api/v1/sources/${s.id}`);
    await f.close();
  });
  test('a PATCH to a platform that validates brings back a source its health check turned inactive; one the user turned off stays off', async () => {
    const down = await startFakeFlowBuilder();
    const moved = await startFakeFlowBuilder();
    try {
      const s = (await inject('POST', '/api/v1/sources', { name: 'moving', source_type: 'flow-builder', url: down.url })).json();
      down.mode = 'error';
      expect((await inject('POST', `/api/v1/sources/${s.id}/health`)).json()).toMatchObject({ healthy: false, status: 'inactive' });
      // the platform moved: the new url passes validation (health, version, flows), which is a passing health check
      const patched = await inject('PATCH', `/api/v1/sources/${s.id}`, { url: moved.url });
      expect(patched.statusCode).toBe(200);
      // before: inactive with the old url's error until the next periodic check (never, with it off), every flow task
      // on the source failing "source moving is inactive"
      expect(patched.json()).toMatchObject({ url: moved.url, status: 'active', last_health_error: null });
      const row = (await stack.db.query('SELECT status, last_health_ok, last_health_at FROM scheduler_sources WHERE id = $1', [s.id])).rows[0];
      expect(row).toMatchObject({ status: 'active', last_health_ok: true });
      expect(row.last_health_at.getTime()).toBeGreaterThanOrEqual(new Date(patched.json().updated_at).getTime() - 1000);
      // switched off by the user: a new url does not switch it on
      await inject('PATCH', `/api/v1/sources/${s.id}`, { status: 'inactive' });
      down.mode = 'ok';
      expect((await inject('PATCH', `/api/v1/sources/${s.id}`, { url: down.url })).json()).toMatchObject({ status: 'inactive', last_health_error: null });
      await inject('DELETE', `/api/v1/sources/${s.id}`);
    } finally {
      await down.close();
      await moved.close();
    }
  });

  test("a health check of a source whose url changed while it ran is not recorded: the old platform's failure does not turn the new one inactive; deleted meanwhile, a 404", async () => {
    const http = require('node:http') as typeof import('node:http');
    // a platform whose /health, once `holding`, answers 500 only when released
    let holding = false;
    let release: () => void = () => undefined;
    let onAsked: () => void = () => undefined;
    let asked = new Promise<void>((resolve) => {
      onAsked = resolve;
    });
    const old = http.createServer((req, res) => {
      const json = (status: number, body: unknown) => res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
      if (req.url === '/health' && holding) {
        release = () => json(500, { detail: 'gone' });
        onAsked();
        return;
      }
      if (req.url === '/health') return json(200, { status: 'ok' });
      if (req.url?.startsWith('/api/v1/flows/')) return json(200, []);
      json(404, { detail: 'Not Found' });
    });
    await new Promise<void>((r) => old.listen(0, '127.0.0.1', r));
    const moved = await startFakeFlowBuilder();
    try {
      const oldUrl = `http://127.0.0.1:${(old.address() as import('node:net').AddressInfo).port}`;
      const created = await inject('POST', '/api/v1/sources', { name: 'moved-meanwhile', source_type: 'flow-builder', url: oldUrl });
      expect(created.statusCode).toBe(201);
      const s = created.json();
      holding = true;
      const checking = inject('POST', `/api/v1/sources/${s.id}/health`);
      await asked;
      expect((await inject('PATCH', `/api/v1/sources/${s.id}`, { url: moved.url })).json()).toMatchObject({ url: moved.url, status: 'active' });
      release();
      const checked = await checking;
      expect(checked.statusCode).toBe(200);
      // the answer is the check's (of the old url); the status is the row's, which the check did not change
      expect(checked.json()).toMatchObject({ id: s.id, healthy: false, status: 'active' });
      expect(checked.json().error).toContain('HTTP 500');
      // before: inactive, with the old url's error, though its url is the new platform's
      expect((await inject('GET', `/api/v1/sources/${s.id}`)).json()).toMatchObject({ url: moved.url, status: 'active', last_health_error: null });
      await inject('DELETE', `/api/v1/sources/${s.id}`);
      // deleted while it is checked: the 404 it would be after (before, a 200 with the deleted source's status)
      holding = false;
      asked = new Promise<void>((resolve) => {
        onAsked = resolve;
      });
      const again = (await inject('POST', '/api/v1/sources', { name: 'deleted-meanwhile', source_type: 'flow-builder', url: oldUrl })).json();
      holding = true;
      const checkingAgain = inject('POST', `/api/v1/sources/${again.id}/health`);
      await asked;
      expect((await inject('DELETE', `/api/v1/sources/${again.id}`)).statusCode).toBe(200);
      release();
      const gone = await checkingAgain;
      expect([gone.statusCode, gone.json()]).toEqual([404, { detail: 'Source not found' }]);
    } finally {
      await moved.close();
      await new Promise((r) => old.close(r));
    }
  });

  test('a flow task naming a source by a name two sources share is a 409 naming their ids; by id, or by a name one source has, it binds', async () => {
    const [f1, f2] = [await startFakeFlowBuilder(), await startFakeFlowBuilder()];
    try {
      const first = (await inject('POST', '/api/v1/sources', { name: 'shared-name', source_type: 'flow-builder', url: f1.url })).json();
      const second = (await inject('POST', '/api/v1/sources', { name: 'other-name', source_type: 'flow-builder', url: f2.url })).json();
      const task = (source: string) => ({ name: 'f', type: 'flow', source, flow: 'summarise' });
      const byName = await inject('POST', '/api/v1/workflows', { name: 'by-unique-name', tasks: [task('other-name')] });
      expect(byName.statusCode).toBe(201);
      expect((await inject('GET', '/api/v1/workflows/by-unique-name')).json().tasks[0].source).toBe(second.id);

      // names are not unique (a PATCH may give a source another's name): a name two sources have names neither
      expect((await inject('PATCH', `/api/v1/sources/${second.id}`, { name: 'shared-name' })).statusCode).toBe(200);
      const before = f1.requests.length + f2.requests.length;
      const ambiguous = await inject('POST', '/api/v1/workflows', { name: 'by-shared-name', tasks: [{ name: 's', type: 'script', script: 'true' }, task('shared-name')] });
      expect([ambiguous.statusCode, ambiguous.json()]).toEqual([
        409,
        { detail: `Task "f": source "shared-name" names 2 sources: ${first.id}, ${second.id}; give the source's id` },
      ]);
      expect(f1.requests.length + f2.requests.length).toBe(before); // no platform was asked for its flows
      expect((await inject('GET', '/api/v1/workflows/by-shared-name')).statusCode).toBe(404);

      const byId = await inject('POST', '/api/v1/workflows', { name: 'by-shared-name', tasks: [task(second.id)] });
      expect(byId.statusCode).toBe(201);
      expect((await inject('GET', '/api/v1/workflows/by-shared-name')).json().tasks[0].source).toBe(second.id);
      for (const w of ['by-unique-name', 'by-shared-name']) await inject('DELETE', `/api/v1/workflows/${w}`);
      for (const s of [first, second]) await inject('DELETE', `/api/v1/sources/${s.id}`);
    } finally {
      await f1.close();
      await f2.close();
    }
  });

  test('a source url is stored and compared in its canonical form (host case, default port, trailing slash, punycode, escape case, trailing dot): a duplicate in any form is refused, in either order, on PATCH, and against rows stored before', async () => {
    const [a, b] = [await startFakeFlowBuilder(), await startFakeFlowBuilder()];
    const [portA, portB] = [new URL(a.url).port, new URL(b.url).port];
    const ids: string[] = [];
    const create = (url: string) => inject('POST', '/api/v1/sources', { source_type: 'flow-builder', url });
    const duplicate = (url: string) => [400, { detail: `Source with URL ${url} already exists` }];
    try {
      // written in another form first: stored canonical, and the canonical form is then the duplicate
      const first = await create(`http://LOCALHOST:${portA}/`);
      expect([first.statusCode, first.json().url]).toEqual([201, `http://localhost:${portA}`]);
      ids.push(first.json().id);
      for (const url of [`http://localhost:${portA}`, `http://LocalHost:${portA}//`, `http://localhost:${portA}/x/..`, `http://localhost.:${portA}/`]) {
        const dup = await create(url);
        expect([dup.statusCode, dup.json()]).toEqual(duplicate(`http://localhost:${portA}`));
      }
      // the canonical form first, then other forms of it
      const second = await create(b.url);
      expect([second.statusCode, second.json().url]).toEqual([201, b.url]);
      ids.push(second.json().id);
      for (const url of [`${b.url}/`, `http://0x7f.0.0.1:${portB}`, `http://127.1:${portB}/`]) {
        const dup = await create(url);
        expect([dup.statusCode, dup.json()]).toEqual(duplicate(b.url));
      }
      // PATCH: another source's url in another form is the same duplicate; nothing changes
      const taken = await inject('PATCH', `/api/v1/sources/${second.json().id}`, { url: `http://LOCALHOST:${portA}/` });
      expect([taken.statusCode, taken.json()]).toEqual(duplicate(`http://localhost:${portA}`));
      expect((await inject('GET', `/api/v1/sources/${second.json().id}`)).json().url).toBe(b.url);
      // its own url in another form is no change: not validated again
      const asked = a.requests.length;
      const same = await inject('PATCH', `/api/v1/sources/${first.json().id}`, { url: `http://localhost:${portA}/` });
      expect([same.statusCode, same.json().url, a.requests.length]).toEqual([200, `http://localhost:${portA}`, asked]);

      // rows stored before (url as written, less trailing slashes): compared in canonical form too
      const legacy = [crypto.randomUUID(), crypto.randomUUID(), crypto.randomUUID(), crypto.randomUUID()];
      await stack.db.query(
        `INSERT INTO scheduler_sources (id, name, source_type, url) VALUES ($1, 'legacy-1', 'flow-builder', 'http://Legacy.Example:80/flows'), ($2, 'legacy-2', 'flow-builder', 'https://BÜCHER.example:443'),
           ($3, 'escaped', 'flow-builder', 'http://escaped.example/a%2Fb'), ($4, 'legacy-3', 'flow-builder', 'http://Dotted.Example.:8080/x%2f%7e')`,
        legacy,
      );
      ids.push(...legacy);
      for (const [url, canonical] of [
        ['http://legacy.example/flows/', 'http://legacy.example/flows'],
        ['http://LEGACY.EXAMPLE/flows', 'http://legacy.example/flows'],
        ['https://xn--bcher-kva.example', 'https://xn--bcher-kva.example'],
        ['https://bücher.example/', 'https://xn--bcher-kva.example'],
        // percent-escapes in another letter case (or an unreserved character escaped), a host's trailing dot
        ['http://escaped.example/a%2fb', 'http://escaped.example/a%2Fb'],
        ['http://escaped.example./%61%2Fb/', 'http://escaped.example/a%2Fb'],
        ['http://dotted.example:8080/x%2F~', 'http://dotted.example:8080/x%2F~'],
      ] as const) {
        const dup = await create(url);
        expect([dup.statusCode, dup.json()]).toEqual(duplicate(canonical));
      }
      const onto = await inject('PATCH', `/api/v1/sources/${second.json().id}`, { url: 'http://legacy.example:80/flows' });
      expect([onto.statusCode, onto.json()]).toEqual(duplicate('http://legacy.example/flows'));

      // a url the schema's pattern takes that no URL parser reads: a 400 naming url, nothing sent or stored
      const unreadable = await create('http://127.0.0.1:99999');
      expect([unreadable.statusCode, unreadable.json()]).toEqual([
        400,
        { detail: 'Request body is invalid: url must be a URL whose host and port can be read (such as https://langflow.example.com; a port is at most 65535)' },
      ]);
      const stored = await stack.db.query('SELECT url FROM scheduler_sources WHERE id = ANY($1::uuid[])', [ids]);
      expect(stored.rows.map((r) => r.url).sort()).toEqual(
        [b.url, 'http://Dotted.Example.:8080/x%2f%7e', 'http://Legacy.Example:80/flows', 'http://escaped.example/a%2Fb', `http://localhost:${portA}`, 'https://BÜCHER.example:443'].sort(),
      );
    } finally {
      for (const id of ids) await inject('DELETE', `/api/v1/sources/${id}`);
      await a.close();
      await b.close();
    }
  });

  test("a PATCH to a platform that lacks a flow the source's workflows run is a 409 naming them, nothing changed; ?force=true makes the change; a platform with every flow needs no force", async () => {
    const [current, lacking, complete] = [await startFakeFlowBuilder(), await startFakeFlowBuilder(), await startFakeFlowBuilder()];
    lacking.withoutFlows = [FAKE_FLOWS.summarise.id];
    const s = (await inject('POST', '/api/v1/sources', { name: 'migrating', source_type: 'flow-builder', url: current.url })).json();
    try {
      const flowTask = (name: string, flow: string) => ({ name, type: 'flow', source: s.id, flow });
      for (const [name, tasks] of [
        ['runs-summarise', [{ name: 's', type: 'script', script: 'true' }, flowTask('sum', 'summarise'), flowTask('tr', 'translate-v2')]],
        ['runs-translate', [flowTask('tr', FAKE_FLOWS.translate.id)]],
      ] as const) {
        expect((await inject('POST', '/api/v1/workflows', { name, tasks })).statusCode).toBe(201);
      }
      const refused = await inject('PATCH', `/api/v1/sources/${s.id}`, { url: `${lacking.url}/`, name: 'moved' });
      expect([refused.statusCode, refused.json()]).toEqual([
        409,
        {
          detail: `Source "migrating": the flow-builder platform at ${lacking.url} lacks flows its workflows run (their runs would fail there): workflow runs-summarise task "sum" runs flow ${FAKE_FLOWS.summarise.id} ("Summarise"). Nothing was changed: create those flows there first, or send the change again with ?force=true to make it anyway`,
        },
      ]);
      const kept = (await inject('GET', `/api/v1/sources/${s.id}`)).json();
      expect(kept).toMatchObject({ name: 'migrating', url: current.url, updated_at: s.updated_at });
      const notForced = await inject('PATCH', `/api/v1/sources/${s.id}?force=false`, { url: lacking.url });
      expect(notForced.statusCode).toBe(409);
      const badForce = await inject('PATCH', `/api/v1/sources/${s.id}?force=yes`, { url: lacking.url });
      expect([badForce.statusCode, badForce.json().detail]).toEqual([400, expect.stringMatching(/force/)]);

      // the planned migration: forced, the change is made
      const forced = await inject('PATCH', `/api/v1/sources/${s.id}?force=true`, { url: lacking.url });
      expect([forced.statusCode, forced.json().url]).toEqual([200, lacking.url]);
      // a platform with every flow the workflows run: no force needed
      const moved = await inject('PATCH', `/api/v1/sources/${s.id}`, { url: complete.url });
      expect([moved.statusCode, moved.json().url]).toEqual([200, complete.url]);
      expect((await inject('GET', `/api/v1/sources/${s.id}`)).json().url).toBe(complete.url);
    } finally {
      await inject('DELETE', `/api/v1/sources/${s.id}`); // and its workflows
      for (const f of [current, lacking, complete]) await f.close();
    }
  });
});
