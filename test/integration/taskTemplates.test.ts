import { startTestStack, makeGitRepo, type TestStack } from '../support/harness';

let stack: TestStack;
let projectId: string;

const inject = (method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, payload?: unknown, headers?: Record<string, string>) =>
  stack.app('task').inject({ method, url, payload: payload as object, headers });

const body = (over: Record<string, unknown> = {}) => ({
  name: 'Bug fix flow',
  description: 'Reproduce, fix, test',
  category: 'bugfix',
  tasks: [
    { title: 'Fix', description: 'make it pass', order: 2, estimatedTime: 3 },
    { title: 'Reproduce', description: 'write a failing test', order: 1, estimatedTime: 1.5 },
    { title: 'Review', description: 'ask for review', order: 3 },
  ],
  metadata: { difficulty: 'easy' },
  ...over,
});

beforeAll(async () => {
  stack = await startTestStack({ services: ['task'] });
  projectId = (await inject('POST', '/api/projects', { name: 'Templates', repository: { url: makeGitRepo() } })).json().data.id;
});
afterAll(async () => {
  await stack.close();
});

describe('task templates', () => {
  test('create keeps tasks in order and derives totalEstimatedTime; get; 404s', async () => {
    const r = await inject('POST', '/api/task-templates', body());
    expect(r.statusCode).toBe(200);
    const t = r.json().data;
    expect(t).toMatchObject({ name: 'Bug fix flow', category: 'bugfix', metadata: { totalEstimatedTime: 4.5, difficulty: 'easy' } });
    expect(t.tasks.map((x: { title: string }) => x.title)).toEqual(['Reproduce', 'Fix', 'Review']);
    expect(typeof t.id).toBe('string');
    expect(Date.parse(t.createdAt)).toBeGreaterThan(0);
    expect((await inject('GET', `/api/task-templates/${t.id}`)).json().data).toEqual(t);
    const missing = await inject('GET', '/api/task-templates/nope');
    expect(missing.statusCode).toBe(404);
    expect(missing.json().error.code).toBe('NOT_FOUND');
  });

  test('bad bodies are 400 VALIDATION_ERROR', async () => {
    const bad = [
      { ...body(), name: undefined },
      { ...body(), tasks: [] },
      { ...body(), tasks: [{ title: 'x', description: 'y' }] },
      { ...body(), tasks: [{ title: 'x', description: 'y', order: 1.5 }] },
      { ...body(), category: 7 },
      { ...body(), extra: true },
      // blank after trimming (names and titles are stored trimmed), also with U+FEFF, which trim() removes
      { ...body(), name: ' \t ' },
      { ...body(), category: '\u3000' },
      { ...body(), tasks: [{ title: '\t', description: 'y', order: 1 }] },
      { ...body(), tasks: [{ title: '\ufeff', description: 'y', order: 1 }] },
    ];
    for (const b of bad) {
      const r = await inject('POST', '/api/task-templates', b);
      expect(r.statusCode).toBe(400);
      expect(r.json().error.code).toBe('VALIDATION_ERROR');
    }
    const t = (await inject('POST', '/api/task-templates', body())).json().data;
    expect((await inject('PUT', `/api/task-templates/${t.id}`, {})).statusCode).toBe(400);
    expect((await inject('PUT', `/api/task-templates/${t.id}`, { tasks: 'no' })).statusCode).toBe(400);
    expect((await inject('PUT', `/api/task-templates/${t.id}`, { tasks: [{ title: '\f', description: '', order: 1 }] })).statusCode).toBe(400);
    // a control character is no part of a title (session 47; until then one trim() keeps was stored as given)
    const refused = await inject('PUT', `/api/task-templates/${t.id}`, { tasks: [{ title: ' \u001c ', description: '', order: 1 }] });
    expect([refused.statusCode, Object.keys(refused.json().error.details)]).toEqual([400, ['tasks.0.title']]);
    const kept = await inject('PUT', `/api/task-templates/${t.id}`, { tasks: [{ title: ' « x » ', description: 'a\n\tb', order: 1 }] });
    expect(kept.statusCode).toBe(200);
    expect(kept.json().data.tasks[0]).toMatchObject({ title: '« x »', description: 'a\n\tb' });
  });

  test('list: pagination, category filter, name search', async () => {
    const mk = async (name: string, category: string) => (await inject('POST', '/api/task-templates', body({ name, category }))).json().data.id;
    const a = await mk('Alpha refactor', 'refactor');
    const b = await mk('Beta REFACTOR pass', 'refactor');
    const c = await mk('Gamma feature', 'feature');
    const ids = async (q: string) => (await inject('GET', `/api/task-templates?${q}`)).json().data.map((x: { id: string }) => x.id);
    expect(await ids('category=refactor')).toEqual([b, a]);
    // as stored: blanks around are ignored; an empty or blank one is a 400 naming it (it matched nothing before)
    expect(await ids('category=%20refactor%20')).toEqual([b, a]);
    for (const q of ['category=', 'category=%20']) {
      const r = await inject('GET', `/api/task-templates?${q}`);
      expect([q, r.statusCode, Object.keys(r.json().error.details)]).toEqual([q, 400, ['category']]);
    }
    expect(await ids('search=refactor')).toEqual([b, a]);
    expect(await ids('search=gamma&category=feature')).toEqual([c]);
    expect(await ids('search=100%25')).toEqual([]);
    const page = (await inject('GET', '/api/task-templates?category=refactor&limit=1&page=2')).json();
    expect(page.data.map((x: { id: string }) => x.id)).toEqual([a]);
    expect(page.pagination).toEqual({ page: 2, limit: 1, total: 2, pages: 2, hasNext: false, hasPrev: true });
    expect((await inject('GET', '/api/task-templates')).json().pagination.limit).toBe(20);
    expect((await inject('GET', '/api/task-templates?limit=101')).statusCode).toBe(400);
  });

  test('update sets updatedAt and re-derives metadata; delete is irreversible; 404s', async () => {
    const t = (await inject('POST', '/api/task-templates', body())).json().data;
    await new Promise((r) => setTimeout(r, 10));
    const u = await inject('PUT', `/api/task-templates/${t.id}`, { name: 'Renamed', tasks: [{ title: 'Only', description: '', order: 1, estimatedTime: 2 }] });
    expect(u.statusCode).toBe(200);
    expect(u.json().data).toMatchObject({ name: 'Renamed', category: 'bugfix', metadata: { totalEstimatedTime: 2, difficulty: 'easy' } });
    expect(Date.parse(u.json().data.updatedAt)).toBeGreaterThan(Date.parse(t.updatedAt));
    expect((await inject('PUT', '/api/task-templates/nope', { name: 'x' })).statusCode).toBe(404);
    expect((await inject('DELETE', `/api/task-templates/${t.id}`)).json().data).toEqual({ deleted: true, templateId: t.id });
    expect((await inject('DELETE', `/api/task-templates/${t.id}`)).statusCode).toBe(404);
    expect((await inject('GET', `/api/task-templates/${t.id}`)).statusCode).toBe(404);
  });

  test('concurrent updates keep every answered change and totalEstimatedTime derived from the tasks', async () => {
    // a PUT of tasks and a PUT of metadata at once: each read the template unlocked and wrote metadata recomputed
    // from its stale copy, so the sum went stale or a 200'd difficulty was lost
    const t = (await inject('POST', '/api/task-templates', body())).json().data;
    for (let round = 1; round <= 8; round++) {
      const estimatedTime = 100 * round;
      const difficulty = `d${round}`;
      const [a, b] = await Promise.all([
        inject('PUT', `/api/task-templates/${t.id}`, { tasks: [{ title: 'One', description: '', order: 1, estimatedTime }] }),
        inject('PUT', `/api/task-templates/${t.id}`, { metadata: { difficulty } }),
      ]);
      expect([a.statusCode, b.statusCode]).toEqual([200, 200]);
      const now = (await inject('GET', `/api/task-templates/${t.id}`)).json().data;
      expect(now.tasks).toEqual([{ title: 'One', description: '', order: 1, estimatedTime }]);
      expect(now.metadata).toEqual({ totalEstimatedTime: estimatedTime, difficulty });
    }
  });

  test('apply creates the tasks in order in the project, with task.created events', async () => {
    const t = (await inject('POST', '/api/task-templates', body())).json().data;
    const r = await inject('POST', `/api/task-templates/${t.id}/apply`, { projectId }, { 'x-user-email': 'lead@example.com' });
    expect(r.statusCode).toBe(201);
    const created = r.json().data.tasks as { id: string; title: string; status: string; createdBy: string; metadata: Record<string, unknown> }[];
    expect(created.map((x) => x.title)).toEqual(['Reproduce', 'Fix', 'Review']);
    expect(created.every((x) => x.status === 'pending' && x.createdBy === 'lead@example.com')).toBe(true);
    expect(created[0]?.metadata).toMatchObject({ templateId: t.id, templateOrder: 1, estimatedTime: 1.5 });
    const listed = (await inject('GET', `/api/projects/${projectId}/tasks?sort=createdAt`)).json().data.map((x: { id: string }) => x.id);
    expect(listed).toEqual(expect.arrayContaining(created.map((x) => x.id)));
    const ev = await stack.db.query("SELECT data->>'taskId' AS id FROM events WHERE type = 'task.created' AND data->>'taskId' = ANY ($1) ORDER BY seq", [created.map((x) => x.id)]);
    expect(ev.rows.map((e) => e.id)).toEqual(created.map((x) => x.id));

    expect((await inject('POST', '/api/task-templates/nope/apply', { projectId })).statusCode).toBe(404);
    // the template exists, the project in the body does not: 409 (404 is for the template), naming the field
    const noProject = await inject('POST', `/api/task-templates/${t.id}/apply`, { projectId: 'nope' });
    expect(noProject.statusCode).toBe(409);
    expect(noProject.json().error).toMatchObject({ code: 'PROJECT_NOT_FOUND', details: { projectId: 'no such project' } });
    expect(noProject.json().error.message).toContain('GET /api/projects');
    expect((await inject('POST', `/api/task-templates/${t.id}/apply`, {})).statusCode).toBe(400);
  });
});
