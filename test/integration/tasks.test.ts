import { gzipSync } from 'node:zlib';
import { makeGitRepo, startTestStack, type TestStack } from '../support/harness';

let stack: TestStack;
let projectId: string;
let otherProjectId: string;

const inject = (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: unknown, headers?: Record<string, string>) =>
  stack.app('task').inject({ method, url, payload: payload as object, headers });

beforeAll(async () => {
  stack = await startTestStack({ services: ['task'] });
  const repo = makeGitRepo();
  projectId = (await inject('POST', '/api/projects', { name: 'Tasks', repository: { url: repo } })).json().data.id;
  otherProjectId = (await inject('POST', '/api/projects', { name: 'Other', repository: { url: repo } })).json().data.id;
});
afterAll(async () => {
  await stack.close();
});

async function createTask(body: Record<string, unknown>) {
  const r = await inject('POST', '/api/tasks', { projectId, ...body });
  expect(r.statusCode).toBe(201);
  return r.json().data;
}

describe('tasks', () => {
  test('create returns a pending task with defaults and the acting user', async () => {
    const r = await inject('POST', '/api/tasks', { projectId, title: 'Write docs', metadata: { files: ['a.ts'] } }, { 'x-user-email': 'dev@example.com' });
    expect(r.statusCode).toBe(201);
    expect(r.json().data).toMatchObject({ projectId, title: 'Write docs', status: 'pending', priority: 'medium', labels: [], createdBy: 'dev@example.com', metadata: { files: ['a.ts'] }, completedAt: null });
    const detail = (await inject('GET', `/api/tasks/${r.json().data.id}`)).json().data;
    expect(detail.attempts).toEqual([]);
    expect(detail.stats).toEqual({ totalAttempts: 0, successfulAttempts: 0, failedAttempts: 0, totalCost: 0, totalDuration: 0 });
    expect(detail.metadata).toMatchObject({ files: ['a.ts'], branch: 'main', worktreePath: null });
  });

  // the detail view sets repository, branch and worktreePath itself (the spec); a client's own values for them used to
  // be stored and shown by every other view, so one task read back with two different metadata
  test('metadata keys the detail view derives (repository, branch, worktreePath) are not stored: every view reads the same', async () => {
    const given = { keep: 1, repository: 'https://evil.example/x.git', branch: '../../etc', worktreePath: '/etc' };
    const created = await createTask({ title: 'Derived keys', metadata: given });
    expect(created.metadata).toEqual({ keep: 1 });
    const listed = (await inject('GET', `/api/tasks?projectId=${projectId}&search=Derived%20keys`)).json().data;
    expect(listed.map((t: { metadata: unknown }) => t.metadata)).toEqual([{ keep: 1 }]);
    const detail = (await inject('GET', `/api/tasks/${created.id}`)).json().data;
    expect(detail.metadata).toMatchObject({ keep: 1, branch: 'main', worktreePath: null });
    expect(detail.metadata.repository).not.toBe(given.repository);
    // a client that sends the detail's metadata back (a read-modify-write) stores only its own keys
    const patched = await inject('PATCH', `/api/tasks/${created.id}`, { metadata: { ...detail.metadata, more: 2 } });
    expect(patched.statusCode).toBe(200);
    expect(patched.json().data.metadata).toEqual({ keep: 1, more: 2 });
  });

  test('a __proto__ or constructor.prototype key in metadata is dropped, not answered with 400 (the document allows any key)', async () => {
    const raw = '{"projectId":"PID","title":"Proto","metadata":{"keep":1,"__proto__":{"polluted":true},"nested":{"constructor":{"prototype":{"polluted":true}},"ok":true}}}';
    const r = await stack.app('task').inject({ method: 'POST', url: '/api/tasks', payload: raw.replace('PID', projectId), headers: { 'content-type': 'application/json' } });
    expect(r.statusCode).toBe(201);
    const metadata = r.json().data.metadata;
    expect(metadata).toMatchObject({ keep: 1, nested: { ok: true } });
    expect(Object.keys(metadata)).not.toContain('__proto__');
    expect(Object.keys(metadata.nested)).toEqual(['ok']);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    const patched = await stack.app('task').inject({ method: 'PATCH', url: `/api/tasks/${r.json().data.id}`, payload: '{"metadata":{"__proto__":1,"b":2}}', headers: { 'content-type': 'application/json' } });
    expect(patched.statusCode).toBe(200);
    expect(Object.keys(patched.json().data.metadata)).not.toContain('__proto__');
  });

  test('filters: status, priority, labels, assignee, search, projectId; sort and pagination', async () => {
    const p = (await inject('POST', '/api/projects', { name: 'Filters', repository: { url: makeGitRepo() } })).json().data.id;
    const mk = async (body: Record<string, unknown>) => (await inject('POST', '/api/tasks', { projectId: p, ...body })).json().data;
    const a = await mk({ title: 'Fix login bug', priority: 'critical', labels: ['bug', 'auth'], assignee: 'claude' });
    const b = await mk({ title: 'Add search', description: 'full text LOGIN page', priority: 'low', labels: ['feature'] });
    const c = await mk({ title: 'Refactor', priority: 'high', labels: ['bug'], assignee: 'codex' });
    await inject('PATCH', `/api/tasks/${c.id}`, { status: 'review' });

    const ids = async (q: string) => (await inject('GET', `/api/tasks?projectId=${p}&${q}`)).json().data.map((t: { id: string }) => t.id);
    expect(await ids('status=review')).toEqual([c.id]);
    expect(await ids('priority=low')).toEqual([b.id]);
    expect((await ids('labels=bug')).sort()).toEqual([a.id, c.id].sort());
    expect(await ids('labels=bug,auth')).toEqual([a.id]);
    expect(await ids('assignee=codex')).toEqual([c.id]);
    // as stored: blanks around are ignored; a blank one is a 400 naming it (it matched nothing before)
    expect(await ids('assignee=%20codex%20')).toEqual([c.id]);
    for (const q of ['assignee=%20', 'assignee=%20%09', `assignee=${'a'.repeat(101)}`]) {
      const r = await inject('GET', `/api/tasks?projectId=${p}&${q}`);
      expect([q, r.statusCode, Object.keys(r.json().error.details)]).toEqual([q, 400, ['assignee']]);
    }
    expect((await ids('search=login')).sort()).toEqual([a.id, b.id].sort());
    expect(await ids('sort=-priority')).toEqual([a.id, c.id, b.id]);
    expect(await ids('sort=priority')).toEqual([b.id, c.id, a.id]);
    expect(await ids('sort=createdAt')).toEqual([a.id, b.id, c.id]);

    const page1 = (await inject('GET', `/api/tasks?projectId=${p}&limit=2&page=1&sort=createdAt`)).json();
    expect(page1.data.map((t: { id: string }) => t.id)).toEqual([a.id, b.id]);
    expect(page1.pagination).toEqual({ page: 1, limit: 2, total: 3, pages: 2, hasNext: true, hasPrev: false });
    const page2 = (await inject('GET', `/api/tasks?projectId=${p}&limit=2&page=2&sort=createdAt`)).json();
    expect(page2.data.map((t: { id: string }) => t.id)).toEqual([c.id]);
    expect(page2.pagination).toMatchObject({ total: 3, hasNext: false, hasPrev: true });
    const filteredCount = (await inject('GET', `/api/tasks?projectId=${p}&labels=bug&limit=1`)).json().pagination;
    expect(filteredCount).toMatchObject({ total: 2, pages: 2 });

    const viaProject = (await inject('GET', `/api/projects/${p}/tasks?status=review`)).json();
    expect(viaProject.data.map((t: { id: string }) => t.id)).toEqual([c.id]);
    expect(viaProject.pagination.total).toBe(1);
  });

  test('patch moves status, sets and clears completedAt, changes updatedAt', async () => {
    const t = await createTask({ title: 'Patch me' });
    await new Promise((r) => setTimeout(r, 5));
    const done = (await inject('PATCH', `/api/tasks/${t.id}`, { status: 'completed', labels: ['x', 'x', 'y'] })).json().data;
    expect(done.status).toBe('completed');
    expect(done.completedAt).not.toBeNull();
    expect(done.labels).toEqual(['x', 'y']);
    expect(new Date(done.updatedAt).getTime()).toBeGreaterThan(new Date(t.updatedAt).getTime());
    for (const status of ['pending', 'in_progress', 'review', 'failed', 'cancelled']) {
      const r = await inject('PATCH', `/api/tasks/${t.id}`, { status });
      expect(r.statusCode).toBe(200);
      expect(r.json().data).toMatchObject({ status, completedAt: null });
    }
  });

  test('labels: a blank one is 400 naming it on create, patch and bulk update; labels are stored trimmed, as the filter reads them', async () => {
    // the `labels` filter trims its entries and drops blank ones, so a blank label could never be filtered on
    const t = await createTask({ title: 'Labelled', labels: ['keep'] });
    for (const labels of [[' '], ['\t\n'], ['ok', '\u3000'], ['\ufeff']]) {
      const at = `labels.${labels.length - 1}`;
      for (const [method, url, payload] of [
        ['POST', '/api/tasks', { projectId, title: 'x', labels }],
        ['PATCH', `/api/tasks/${t.id}`, { labels }],
        ['POST', '/api/tasks/bulk/update', { taskIds: [t.id], updates: { labels } }],
      ] as const) {
        const r = await inject(method, url, payload);
        expect([method, url, JSON.stringify(labels), r.statusCode, r.json().error?.code]).toEqual([method, url, JSON.stringify(labels), 400, 'VALIDATION_ERROR']);
        expect(Object.keys(r.json().error.details)).toContainEqual(expect.stringMatching(new RegExp(`^(updates\\.)?${at.replace('.', '\\.')}$`)));
      }
    }
    expect((await inject('GET', `/api/tasks/${t.id}`)).json().data.labels).toEqual(['keep']);
    // a padded label is kept trimmed (once), so filtering on it finds the task
    const padded = await createTask({ title: 'Padded', labels: [' ui ', 'ui', '\u3000api'] });
    expect(padded.labels).toEqual(['ui', 'api']);
    const patched = (await inject('PATCH', `/api/tasks/${t.id}`, { labels: [' keep', 'keep '] })).json().data;
    expect(patched.labels).toEqual(['keep']);
    const found = (await inject('GET', `/api/tasks?projectId=${projectId}&labels=${encodeURIComponent(' ui , api ')}`)).json().data.map((x: { id: string }) => x.id);
    expect(found).toEqual([padded.id]);
  });

  test('bulk update and bulk delete are atomic and report unknown ids', async () => {
    const t1 = await createTask({ title: 'bulk 1' });
    const t2 = await createTask({ title: 'bulk 2' });
    const up = await inject('POST', '/api/tasks/bulk/update', { taskIds: [t1.id, t2.id, 'missing'], updates: { priority: 'high', assignee: 'amp' } });
    expect(up.statusCode).toBe(200);
    expect(up.json().data).toMatchObject({ updated: 2, notFound: ['missing'] });
    expect((await inject('GET', `/api/tasks/${t2.id}`)).json().data).toMatchObject({ priority: 'high', assignee: 'amp' });

    const bad = await inject('POST', '/api/tasks/bulk/update', { taskIds: [t1.id], updates: { status: 'done' } });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().error.details).toHaveProperty(['updates.status']);
    expect((await inject('GET', `/api/tasks/${t1.id}`)).json().data.status).toBe('pending');

    const del = await inject('POST', '/api/tasks/bulk/delete', { taskIds: [t1.id, t2.id, 'missing'] });
    expect(del.json().data).toMatchObject({ deleted: 2, notFound: ['missing'] });
    expect((await inject('GET', `/api/tasks/${t1.id}`)).statusCode).toBe(404);
    expect((await inject('POST', '/api/tasks/bulk/delete', { taskIds: [] })).statusCode).toBe(400);
  });

  test('delete removes the task; unknown ids give 404', async () => {
    const t = await createTask({ title: 'delete me' });
    const d = await inject('DELETE', `/api/tasks/${t.id}`);
    expect(d.json()).toMatchObject({ success: true, data: { deleted: true, taskId: t.id } });
    const again = await inject('DELETE', `/api/tasks/${t.id}`);
    expect(again.statusCode).toBe(404);
    expect(again.json().error.code).toBe('NOT_FOUND');
    const get = await inject('GET', `/api/tasks/${t.id}`);
    expect(get.json().error.code).toBe('TASK_NOT_FOUND');
    expect((await inject('PATCH', `/api/tasks/${t.id}`, { title: 'x' })).json().error.code).toBe('TASK_NOT_FOUND');
  });

  test('a task for an unknown project gives 404 PROJECT_NOT_FOUND', async () => {
    const r = await inject('POST', '/api/tasks', { projectId: 'no-such-project', title: 'x' });
    expect(r.statusCode).toBe(404);
    expect(r.json().error.code).toBe('PROJECT_NOT_FOUND');
  });

  test('task counts stay right per project (trigger-kept counters)', async () => {
    const before = (await inject('GET', `/api/tasks?projectId=${otherProjectId}&limit=1`)).json().pagination.total;
    const t = (await inject('POST', '/api/tasks', { projectId: otherProjectId, title: 'count me' })).json().data;
    expect((await inject('GET', `/api/tasks?projectId=${otherProjectId}&limit=1`)).json().pagination.total).toBe(before + 1);
    await inject('PATCH', `/api/tasks/${t.id}`, { status: 'failed' });
    expect((await inject('GET', `/api/tasks?projectId=${otherProjectId}&status=failed`)).json().pagination.total).toBe(1);
    await inject('DELETE', `/api/tasks/${t.id}`);
    expect((await inject('GET', `/api/tasks?projectId=${otherProjectId}&status=failed`)).json().pagination.total).toBe(0);
  });
});

describe('bad input never gives a 500', () => {
  test('malformed JSON', async () => {
    const r = await stack.app('task').inject({ method: 'POST', url: '/api/tasks', headers: { 'content-type': 'application/json' }, payload: '{"title": ' });
    expect(r.statusCode).toBe(400);
    expect(r.json()).toMatchObject({ success: false, error: { code: 'VALIDATION_ERROR', message: 'Malformed JSON in request body' } });
  });

  test('text/plain body gives 415', async () => {
    const r = await stack.app('task').inject({ method: 'POST', url: '/api/tasks', headers: { 'content-type': 'text/plain' }, payload: 'title=x' });
    expect(r.statusCode).toBe(415);
    expect(r.json().success).toBe(false);
  });

  test('a compressed body gives 415 saying to send it uncompressed; a body-less request may name any coding', async () => {
    const gz = gzipSync(JSON.stringify({ projectId, title: 'zipped' }));
    const r = await stack.app('task').inject({ method: 'POST', url: '/api/tasks', headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' }, payload: gz });
    expect(r.statusCode).toBe(415);
    expect(r.headers['accept-encoding']).toBe('identity');
    expect(r.json().error).toMatchObject({ code: 'VALIDATION_ERROR', message: expect.stringContaining('Content-Encoding gzip is not supported: send the request body uncompressed') });
    // a header naming a coding the body does not have is refused too (it used to be read as plain JSON)
    const plain = JSON.stringify({ projectId, title: 'not really zipped' });
    const lie = await stack.app('task').inject({ method: 'POST', url: '/api/tasks', headers: { 'content-type': 'application/json', 'content-encoding': 'br' }, payload: plain });
    expect(lie.statusCode).toBe(415);
    const identity = await stack.app('task').inject({ method: 'POST', url: '/api/tasks', headers: { 'content-type': 'application/json', 'content-encoding': 'identity' }, payload: plain });
    expect(identity.statusCode).toBe(201);
    const get = await stack.app('task').inject({ method: 'GET', url: `/api/tasks?projectId=${projectId}&limit=1`, headers: { 'content-encoding': 'gzip' } });
    expect(get.statusCode).toBe(200);
  });

  test('oversized body gives 413', async () => {
    const r = await inject('POST', '/api/tasks', { projectId, title: 'big', description: 'x'.repeat(2 * 1024 * 1024) });
    expect(r.statusCode).toBe(413);
    expect(r.json().success).toBe(false);
  });

  test('wrong types and bad enums', async () => {
    const wrong = await inject('POST', '/api/tasks', { projectId, title: 123 });
    expect(wrong.statusCode).toBe(400);
    expect(wrong.json().error.details).toHaveProperty('title');
    const badEnum = await inject('POST', '/api/tasks', { projectId, title: 'x', priority: 'urgent' });
    expect(badEnum.statusCode).toBe(400);
    expect(badEnum.json().error.details.priority).toMatch(/low, medium, high, critical/);
    const badLabels = await inject('POST', '/api/tasks', { projectId, title: 'x', labels: 'bug' });
    expect(badLabels.json().error.details).toHaveProperty('labels');
    const emptyPatch = await inject('PATCH', `/api/tasks/whatever`, {});
    expect(emptyPatch.statusCode).toBe(400);
  });

  test('query validation: limit over 100, page 0, bad status, bad sort', async () => {
    for (const q of ['limit=101', 'page=0', 'limit=abc', 'status=done', 'sort=colour', 'priority=urgent']) {
      const r = await inject('GET', `/api/tasks?${q}`);
      expect(r.statusCode).toBe(400);
      expect(r.json().error.code).toBe('VALIDATION_ERROR');
    }
  });

  test('unknown route gives the envelope 404', async () => {
    const r = await inject('GET', '/api/nothing-here');
    expect(r.statusCode).toBe(404);
    expect(r.json()).toMatchObject({ success: false, error: { code: 'NOT_FOUND' } });
  });
});

describe('metrics', () => {
  test('request counters and duration histograms per route and status', async () => {
    await inject('GET', '/api/tasks?limit=1');
    const text = (await inject('GET', '/metrics')).body;
    expect(text).toMatch(/armada_http_requests_total\{service="task",method="GET",route="\/api\/tasks",status_code="200"\} \d+/);
    expect(text).toMatch(/armada_http_request_duration_seconds_bucket\{le="0.005",service="task",method="GET",route="\/api\/tasks",status_code="200"\}/);
    expect(text).toMatch(/route="\/api\/tasks\/:id",status_code="404"/);
  });
});

describe('task events', () => {
  test('create publishes task.created; a status patch publishes task.status_changed, task.completed and task.updated; a no-op status publishes nothing', async () => {
    const t = await createTask({ title: 'Evented' });
    await inject('PATCH', `/api/tasks/${t.id}`, { status: 'completed' });
    await inject('PATCH', `/api/tasks/${t.id}`, { status: 'completed' });
    const { rows } = await stack.db.query<{ type: string; data: Record<string, unknown> }>(
      `SELECT type, data FROM events WHERE $1 = ANY(topics) ORDER BY seq`,
      [`task:${t.id}`],
    );
    expect(rows.map((r) => r.type)).toEqual(['task.created', 'task.status_changed', 'task.completed', 'task.updated']);
    expect(rows[1]?.data).toMatchObject({ taskId: t.id, status: 'completed', previousStatus: 'pending' });
    expect(rows[3]?.data).toMatchObject({ taskId: t.id, fields: ['status'] });
  });
});

describe('list items built by PostgreSQL', () => {
  test('equal the task the API returns on create and patch, field for field (timestamps, nulls, labels, metadata)', async () => {
    const created = await createTask({ title: 'Shape "quoted" \\ ünïcode', description: 'multi\nline', labels: ['a', 'b'], assignee: 'claude', metadata: { files: ['x.ts'], n: 1, nested: { ok: true } } });
    const patched = (await inject('PATCH', `/api/tasks/${created.id}`, { status: 'completed' })).json().data;
    const listed = (await inject('GET', `/api/tasks?projectId=${projectId}&limit=100`)).json().data.find((t: { id: string }) => t.id === created.id);
    expect(listed).toEqual(patched);
    const bare = await createTask({ title: 'No extras' });
    const listedBare = (await inject('GET', `/api/projects/${projectId}/tasks?limit=100&search=No%20extras`)).json().data[0];
    expect(listedBare).toEqual(bare);
  });
});
