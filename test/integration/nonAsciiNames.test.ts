/**
 * Non-ASCII text where the services compare case-insensitively (docs/task-service.md, "Projects"): project names are
 * unique by PostgreSQL's lower() of their NFC form, and nothing in JavaScript decides it first, so create and rename
 * agree with the index: a clash is a 409 PROJECT_EXISTS, never a 500, and what the index lets through is created.
 * Full case folding is not applied (`Straße` and `STRASSE` are two names). Searches (tasks, templates, multi-agent
 * memory) and filters (traces) take such text, and LIKE's own characters, as text: no 500.
 */
import type { TestStack } from '../support/harness';
import { makeGitRepo, startTestStack } from '../support/harness';

let stack: TestStack;
let repo: string;

beforeAll(async () => {
  stack = await startTestStack({ services: ['task', 'agents', 'traces'] });
  repo = makeGitRepo();
}, 120_000);
afterAll(async () => {
  await stack?.close();
});

const task = (method: 'GET' | 'POST' | 'PATCH', url: string, payload?: object) => stack.app('task').inject({ method, url, payload });
const createProject = (name: string) => task('POST', '/api/projects', { name, repository: { url: repo } });
const projectCount = async () => (await stack.db.query<{ n: number }>('SELECT count(*)::int AS n FROM projects')).rows[0]?.n ?? 0;

/** What PostgreSQL's lower() makes of a name: the index's own key, asked of the database the service uses. */
const lowerInDb = async (name: string) => (await stack.db.query<{ l: string }>('SELECT lower($1) AS l', [name.normalize('NFC')])).rows[0]?.l;

describe('project names', () => {
  const pairs: [string, string][] = [
    ['Straße', 'STRASSE'], // ß has no one-letter upper case: two names
    ['Fußweg', 'FUẞWEG'], // U+1E9E, the capital sharp s
    ['İstanbul', 'istanbul'], // U+0130, dotted capital I
    ['i̇zmir', 'İZMIR'], // i + U+0307 combining dot above
    ['ılık', 'ILIK'], // Turkish dotless ı
    ['Ωmega', 'ωMEGA'],
    ['Café', 'CAFÉ'],
    ['Cafe\u0301 2', 'café 2'], // decomposed é: stored NFC
  ];

  test.each(pairs)('%s then %s: the second is a 409 exactly when lower() makes them equal, never a 500; nothing else is written', async (first, second) => {
    const a = await createProject(first);
    expect([first, a.statusCode]).toEqual([first, 201]);
    const before = await projectCount();
    const clash = (await lowerInDb(first)) === (await lowerInDb(second));
    const b = await createProject(second);
    expect({ second, status: b.statusCode, code: b.json().error?.code }).toEqual({ second, status: clash ? 409 : 201, code: clash ? 'PROJECT_EXISTS' : undefined });
    expect(b.body).not.toMatch(/\bat .*\.(ts|js):\d+/);
    expect(await projectCount()).toBe(before + (clash ? 0 : 1));
    // renaming another project to either name agrees with the same index
    const other = await createProject(`other ${first} ${second}`);
    for (const name of [first, second]) {
      const renamed = await task('PATCH', `/api/projects/${other.json().data.id}`, { name: name.toUpperCase() });
      const taken = (await stack.db.query('SELECT 1 FROM projects WHERE lower(name) = lower($1) AND id <> $2', [name.toUpperCase().normalize('NFC'), other.json().data.id])).rowCount !== 0;
      expect({ name, status: renamed.statusCode }).toEqual({ name, status: taken ? 409 : 200 });
      if (renamed.statusCode === 200) await task('PATCH', `/api/projects/${other.json().data.id}`, { name: `other ${first} ${second}` });
    }
  });

  test('the names come back as sent (NFC), and the documented example holds: Straße and STRASSE are two projects', async () => {
    const list = (await task('GET', '/api/projects?limit=100')).json().data.map((p: { name: string }) => p.name);
    expect(list).toEqual(expect.arrayContaining(['Straße', 'STRASSE', 'Café', 'Café 2']));
    expect(list).not.toContain('Cafe\u0301 2');
  });
});

describe('searches and filters take non-ASCII and LIKE characters as text', () => {
  const probes = ['straße', 'STRASSE', 'İ', 'i̇', 'ı', 'Σ', '%', '_', '\\', "'", '&|!:*', '😀', 'ǅ'];

  test('tasks: search finds titles case-insensitively by lower(), and never 500s', async () => {
    const projectId = (await createProject('search project')).json().data.id as string;
    for (const title of ['Straße bauen', 'ÖL wechseln', '100% done', 'snake_case']) expect((await task('POST', '/api/tasks', { projectId, title })).statusCode).toBe(201);
    const found = async (q: string) => {
      const r = await task('GET', `/api/tasks?projectId=${projectId}&search=${encodeURIComponent(q)}`);
      expect([q, r.statusCode]).toEqual([q, 200]);
      return r.json().data.map((t: { title: string }) => t.title).sort();
    };
    expect(await found('STRASSE')).toEqual([]);
    expect(await found('STRAßE')).toEqual(['Straße bauen']);
    expect(await found('öl')).toEqual(['ÖL wechseln']);
    expect(await found('%')).toEqual(['100% done']);
    expect(await found('_')).toEqual(['snake_case']);
    for (const q of probes) await found(q);
  });

  test('task templates: search is a substring of the name, % and _ included', async () => {
    for (const name of ['Übergabe', '50% plan']) {
      const r = await task('POST', '/api/task-templates', { name, description: '', category: 'c', tasks: [{ title: 't', description: '', order: 0 }] });
      expect(r.statusCode).toBe(200);
    }
    const found = async (q: string) => {
      const r = await task('GET', `/api/task-templates?search=${encodeURIComponent(q)}`);
      expect([q, r.statusCode]).toEqual([q, 200]);
      return r.json().data.map((t: { name: string }) => t.name).sort();
    };
    expect(await found('übergabe')).toEqual(['Übergabe']);
    expect(await found('%')).toEqual(['50% plan']);
    for (const q of probes) await found(q);
  });

  test('multi-agent memory search and trace filters: never a 500', async () => {
    const key = { 'x-api-key': stack.keys.agents };
    const stored = await stack.app('agents').inject({ method: 'POST', url: '/api/v1/memory', headers: key, payload: { content: 'Die Straße in İstanbul ist ılık' } });
    expect(stored.statusCode).toBe(201);
    for (const q of [...probes, 'straße istanbul']) {
      const r = await stack.app('agents').inject({ method: 'GET', url: `/api/v1/memory/search?q=${encodeURIComponent(q)}`, headers: key });
      expect([q, r.statusCode]).toEqual([q, 200]);
    }
    const hit = await stack.app('agents').inject({ method: 'GET', url: `/api/v1/memory/search?q=${encodeURIComponent('STRASSE straße')}`, headers: key });
    expect(hit.json().results.length).toBe(1);
    for (const q of probes) {
      const r = await stack.app('traces').inject({ method: 'GET', url: `/api/v1/traces?instance=${encodeURIComponent(q)}`, headers: { 'x-api-key': stack.keys.traces } });
      expect([q, r.statusCode]).toEqual([q, 200]);
    }
  });
});
