import crypto from 'node:crypto';
import { buildService } from '../../api/services';
import { insertAgentTask } from '../../lib/db/agentTasks';
import { ConfigError, parseFileConfig } from '../../lib/config';
import { logger, startTestStack, type TestStack } from '../support/harness';

const KEY = 'test-api-key-0123456789';
let stack: TestStack;

beforeAll(async () => {
  stack = await startTestStack({ services: ['agents'] });
});
afterAll(async () => {
  await stack.close();
});

const call = (method: 'GET' | 'POST', url: string, payload?: unknown) =>
  stack.app('agents').inject({ method, url, payload: payload as object, headers: { 'x-api-key': KEY } });

async function store(content: string, agent?: string, metadata?: Record<string, unknown>): Promise<string> {
  const res = await call('POST', '/api/v1/memory', { content, ...(agent ? { agent } : {}), ...(metadata ? { metadata } : {}) });
  expect(res.statusCode).toBe(201);
  return res.json().id;
}

describe('shared memory', () => {
  let all: string;
  let one: string;
  beforeAll(async () => {
    one = await store('Postgres tuning tips for busy servers', 'alice');
    all = await store('The replication lag alert fires when Postgres falls behind; check the lag on the replica', 'bob', { runbook: true });
    await store('Lunch is served at noon in the canteen', 'alice');
    await store('Shared note: nothing about databases here');
  });

  test('POST /memory stores content, agent and metadata', async () => {
    const res = await call('POST', '/api/v1/memory', { content: 'metadata check', metadata: { source: 'manual', tags: ['a'] } });
    expect(res.statusCode).toBe(201);
    expect(res.json()).toMatchObject({ content: 'metadata check', agent: null, metadata: { source: 'manual', tags: ['a'] }, createdAt: expect.any(String), id: expect.any(String) });
  });

  test('an entry holding every query word ranks above one holding a single word; relevance is within 0..1', async () => {
    const res = await call('GET', `/api/v1/memory/search?q=${encodeURIComponent('postgres replication lag')}`);
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body.total).toBe(2);
    expect(body.results.map((r: { id: string }) => r.id)).toEqual([all, one]);
    for (const r of body.results) {
      expect(r.relevance).toBeGreaterThan(0);
      expect(r.relevance).toBeLessThanOrEqual(1);
    }
    expect(body.results[0].relevance).toBeGreaterThan(body.results[1].relevance);
    // the entry holding every word is the best match (1); the one holding one word of three at most 1/3
    expect(body.results[0].relevance).toBe(1);
    expect(body.results[1].relevance).toBeLessThanOrEqual(1 / 3);
    expect(body.results[0]).toMatchObject({ agent: 'bob', metadata: { runbook: true }, content: expect.stringContaining('replication lag') });
  });

  test('agent and limit filters are part of the search; total counts every match', async () => {
    const alice = (await call('GET', '/api/v1/memory/search?q=postgres%20replication&agent=alice')).json();
    expect(alice.total).toBe(1);
    expect(alice.results.map((r: { id: string }) => r.id)).toEqual([one]);
    const limited = (await call('GET', '/api/v1/memory/search?q=postgres%20replication&limit=1')).json();
    expect(limited.results).toHaveLength(1);
    expect(limited.results[0].id).toBe(all);
    expect(limited.total).toBe(2);
    const second = (await call('GET', '/api/v1/memory/search?q=postgres%20replication&limit=1&offset=1')).json();
    expect(second.results.map((r: { id: string }) => r.id)).toEqual([one]);
    // English stemming: "servers" matches "server"
    expect((await call('GET', '/api/v1/memory/search?q=server')).json().total).toBe(1);
  });

  test('odd queries are answered, not 500s', async () => {
    const stop = (await call('GET', '/api/v1/memory/search?q=the%20and')).json();
    expect(stop).toMatchObject({ results: [], total: 0 });
    const odd = await call('GET', `/api/v1/memory/search?q=${encodeURIComponent("lag & | ! ( ' :* <->")}`);
    expect(odd.statusCode).toBe(200);
    expect(odd.json().total).toBe(1);
    expect((await call('GET', '/api/v1/memory/search')).statusCode).toBe(400);
    expect((await call('GET', '/api/v1/memory/search?q=')).statusCode).toBe(400);
    expect((await call('GET', '/api/v1/memory/search?q=x&limit=101')).statusCode).toBe(400);
  });

  test('stats count entries by agent and give a human-readable storage size', async () => {
    const stats = (await call('GET', '/api/v1/memory/stats')).json();
    expect(stats.totalEntries).toBe(5);
    // entries without an agent are counted under "(shared)", so byAgent adds up to totalEntries
    expect(stats.byAgent).toEqual({ alice: 2, bob: 1, '(shared)': 2 });
    expect(stats.sharedEntries).toBe(2);
    expect(stats.storageSize).toMatch(/^\d+(\.\d)? (B|KB|MB)$/);
    expect(stats.storageBytes).toBeGreaterThan(0);
  });

  test('an exact single hit has relevance 1 (spec: relevance 0..1); stats.byAgent adds up to totalEntries', async () => {
    const id = await store('Zanzibar ferry timetable', 'carol');
    for (const q of ['Zanzibar ferry timetable', 'zanzibar']) {
      const res = await call('GET', `/api/v1/memory/search?q=${encodeURIComponent(q)}`);
      expect(res.statusCode).toBe(200);
      expect(res.json()).toMatchObject({ total: 1, results: [{ id, agent: 'carol', content: 'Zanzibar ferry timetable', relevance: 1 }] });
    }
    // one word of two found: half relevant
    const half = (await call('GET', `/api/v1/memory/search?q=${encodeURIComponent('zanzibar volcano')}`)).json();
    expect(half.results).toEqual([expect.objectContaining({ id, relevance: 0.5 })]);
    await store('another shared note');
    const stats = (await call('GET', '/api/v1/memory/stats')).json();
    expect(stats).toMatchObject({ totalEntries: 7, sharedEntries: 3, byAgent: { alice: 2, bob: 1, carol: 1, '(shared)': 3 } });
    const sum = Object.values(stats.byAgent as Record<string, number>).reduce((a, b) => a + b, 0);
    expect(sum).toBe(stats.totalEntries);
  });

  test('a query word holding an & (a URL with a query string) is searched as written: the entry holding the URL ranks first', async () => {
    const url = await store('The build dashboard is at http://ci.example.test/view?job=armada&branch=main', 'carol');
    const mirror = await store('ci.example.test ci.example.test ci.example.test ci.example.test mirror', 'carol');
    const res = (await call('GET', `/api/v1/memory/search?agent=carol&q=${encodeURIComponent('http://ci.example.test/view?job=armada&branch=main')}`)).json();
    // before, the query looked for `…job=armada|branch=main` and matched the host alone: the mirror ranked first
    expect(res.results.map((r: { id: string }) => r.id)).toEqual([url, mirror]);
    expect(res.results[0].relevance).toBeGreaterThan(res.results[1].relevance);
  });

  test('an entry is found whichever Unicode form (NFC, NFD) it and the query are written in, and comes back as written', async () => {
    // macOS input and file names give `é` decomposed (e + U+0301): to_tsvector read that as another word, so an entry
    // written one way was not found by a query typed the other (until session 51; migration 107)
    const composed = await store('Lunch notes from the caf\u00e9 on the corner', 'unicode-forms');
    const decomposed = await store('Dessert list: cre\u0300me bru\u0302le\u0301e for Friday', 'unicode-forms');
    const found: Record<string, string[]> = {};
    for (const term of ['caf\u00e9', 'cafe\u0301', 'cr\u00e8me br\u00fbl\u00e9e', 'cre\u0300me bru\u0302le\u0301e']) {
      const res = await call('GET', `/api/v1/memory/search?agent=unicode-forms&q=${encodeURIComponent(term)}`);
      expect(res.statusCode).toBe(200);
      const label = `${term.normalize('NFC')} (${term === term.normalize('NFC') ? 'NFC' : 'NFD'})`;
      found[label] = res.json().results.map((r: { id: string; relevance: number }) => `${r.id === composed ? 'composed' : r.id === decomposed ? 'decomposed' : r.id} ${r.relevance}`);
    }
    expect(found).toEqual({
      'café (NFC)': ['composed 1'],
      'café (NFD)': ['composed 1'],
      'crème brûlée (NFC)': ['decomposed 1'],
      'crème brûlée (NFD)': ['decomposed 1'],
    });
    const hit = (await call('GET', `/api/v1/memory/search?agent=unicode-forms&q=${encodeURIComponent('br\u00fbl\u00e9e')}`)).json().results[0];
    expect(hit.content).toBe('Dessert list: cre\u0300me bru\u0302le\u0301e for Friday'); // stored as written, not normalised
  });

  test('validation and auth', async () => {
    const missing = await call('POST', '/api/v1/memory', { metadata: {} });
    expect(missing.statusCode).toBe(400);
    expect(missing.json().detail).toMatch(/content/);
    expect((await call('POST', '/api/v1/memory', { content: '' })).statusCode).toBe(400);
    expect((await call('POST', '/api/v1/memory', { content: 'x', metadata: 'nope' })).statusCode).toBe(400);
    // white space only: an entry no search could ever find, a task that would run its agent on an empty prompt
    const before = await stack.db.query<{ m: number; t: number }>('SELECT (SELECT count(*) FROM agent_memory)::int AS m, (SELECT count(*) FROM agent_tasks)::int AS t');
    for (const blank of [' ', '\n\t ', '\u00a0\u3000']) {
      const memory = await call('POST', '/api/v1/memory', { content: blank });
      expect(memory.statusCode).toBe(400);
      expect(memory.json().detail).toMatch(/^Request body is invalid: content /);
      const task = await call('POST', '/api/v1/tasks', { agent: 'anyone', task: blank });
      expect(task.statusCode).toBe(400);
      expect(task.json().detail).toMatch(/^Request body is invalid: task /);
    }
    const after = await stack.db.query<{ m: number; t: number }>('SELECT (SELECT count(*) FROM agent_memory)::int AS m, (SELECT count(*) FROM agent_tasks)::int AS t');
    expect(after.rows[0]).toEqual(before.rows[0]);
    expect((await call('POST', '/api/v1/memory', { content: ' padded ' })).statusCode).toBe(201);
    const noKey = await stack.app('agents').inject({ method: 'GET', url: '/api/v1/memory/search?q=lag' });
    expect(noKey.statusCode).toBe(401);
    expect(noKey.json()).toEqual({ detail: 'Invalid API key' });
    const bearer = await stack.app('agents').inject({ method: 'GET', url: '/api/v1/memory/stats', headers: { authorization: `Bearer ${KEY}` } });
    expect(bearer.statusCode).toBe(200);
  });

  test('agents named like the properties of a JavaScript object (__proto__, constructor) are counted in byAgent like any other', async () => {
    const before = (await call('GET', '/api/v1/memory/stats')).json();
    await store('kept under an odd name', '__proto__');
    await store('kept under another odd name', 'constructor');
    const res = await call('GET', '/api/v1/memory/stats');
    // read from the raw text: JSON.parse of the answer would make a "__proto__" key an own property either way
    const stats = JSON.parse(res.body.replace('"__proto__"', '"proto-key"'));
    expect(stats.totalEntries).toBe(before.totalEntries + 2);
    expect(stats.byAgent).toMatchObject({ 'proto-key': 1, constructor: 1 });
    const sum = Object.values(stats.byAgent as Record<string, number>).reduce((a, b) => a + b, 0);
    expect(sum).toBe(stats.totalEntries);
  });

  test('a task id is a UUID in any letter case, as ids are in the other services (it was a 404 in upper case)', async () => {
    const id = crypto.randomUUID();
    await insertAgentTask(stack.db, { id, agent: 'anyone', task: 'look it up', priority: 'normal' });
    for (const written of [id, id.toUpperCase(), `${id.slice(0, 9).toUpperCase()}${id.slice(9)}`]) {
      const res = await call('GET', `/api/v1/tasks/${written}`);
      expect([written, res.statusCode, res.json().taskId]).toEqual([written, 200, id]);
    }
    expect((await call('GET', '/api/v1/tasks/no-such-task')).statusCode).toBe(404);
  });

  test('an agent whose llm names no profile stops the service from starting, with a clear message', async () => {
    const file = parseFileConfig({ agents: { real: { command: ['true'] } }, multiAgent: { agents: [{ name: 'x', llm: 'imaginary' }] } }, stack.config.configPath);
    const build = buildService('agents', { db: stack.db, config: { ...stack.config, file }, keys: stack.keys, temporal: stack.temporal, logger, metrics: stack.metrics });
    await expect(build).rejects.toThrow(ConfigError);
    await expect(build).rejects.toThrow(/multiAgent\.agents\.0\.llm: "imaginary" \(agent "x"\) is not an agent profile; define it under "agents" or use one of: .*\breal\b/);
  });

  test('an agent name the API cannot address (over 200 characters), or . or .. (its scratch directory would be outside agents/), stops the service from starting', async () => {
    const build = async (name: string) => {
      const file = parseFileConfig({ agents: { real: { command: ['true'] } }, multiAgent: { agents: [{ name: 'fine', llm: 'real' }, { name, llm: 'real' }] } }, stack.config.configPath);
      return buildService('agents', { db: stack.db, config: { ...stack.config, file }, keys: stack.keys, temporal: stack.temporal, logger, metrics: stack.metrics });
    };
    // before: the service started and listed the agent, and every path naming it was a 400 (name over 200 characters)
    await expect(build('a'.repeat(201))).rejects.toThrow(/multiAgent\.agents\.1\.name" must NOT have more than 200 characters/);
    for (const name of ['.', '..']) {
      await expect(build(name)).rejects.toThrow(ConfigError);
      await expect(build(name)).rejects.toThrow(`multiAgent.agents.1.name: "${name}" is not an agent name: it names a directory, not one of its own under agents/`);
    }
    // the longest name the API takes is a name like any other (not made ready: its actors are not started)
    await (await build('a'.repeat(200))).close();
  });
});
