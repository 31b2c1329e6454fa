import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { eventually, makeGitRepo, startTestStack, type TestStack } from '../support/harness';

let stack: TestStack;
let repo: string;

beforeAll(async () => {
  stack = await startTestStack({ services: ['task'], worker: true });
  repo = makeGitRepo();
});
afterAll(async () => {
  await stack.close();
});

const inject = (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: unknown) =>
  stack.app('task').inject({ method, url, payload: payload as object });

describe('projects', () => {
  test('create, read, list, patch, delete', async () => {
    const created = await inject('POST', '/api/projects', { name: 'Alpha', description: 'first', repository: { url: repo }, defaultLLM: 'claude' });
    expect(created.statusCode).toBe(201);
    const p = created.json().data;
    expect(p).toMatchObject({ name: 'Alpha', description: 'first', defaultLLM: 'claude', repository: { url: repo, branch: 'main', status: 'ready' }, git_repo_path: repo });
    expect(p.stats).toEqual({ tasks: 0, completedTasks: 0, inProgressTasks: 0, failedTasks: 0, activeAttempts: 0, totalCost: 0 });
    expect(p.config.worktrees.enabled).toBe(true);
    expect(created.json().meta.version).toBe(stack.config.version);

    const got = await inject('GET', `/api/projects/${p.id}`);
    expect(got.statusCode).toBe(200);
    expect(got.json().data.id).toBe(p.id);

    const list = await inject('GET', '/api/projects?page=1&limit=10');
    expect(list.statusCode).toBe(200);
    expect(list.json().data.map((x: { id: string }) => x.id)).toContain(p.id);
    expect(list.json().data[0]).toHaveProperty('git_repo_path');
    expect(list.json().pagination).toMatchObject({ page: 1, limit: 10, hasPrev: false });

    const patched = await inject('PATCH', `/api/projects/${p.id}`, { name: 'Alpha 2', defaultLLM: 'codex', setup_script: 'npm ci' });
    expect(patched.statusCode).toBe(200);
    expect(patched.json().data).toMatchObject({ name: 'Alpha 2', defaultLLM: 'codex', setup_script: 'npm ci' });
    expect(new Date(patched.json().data.updatedAt).getTime()).toBeGreaterThanOrEqual(new Date(p.updatedAt).getTime());

    const task = await inject('POST', '/api/tasks', { projectId: p.id, title: 'doomed' });
    expect(task.statusCode).toBe(201);
    const del = await inject('DELETE', `/api/projects/${p.id}`);
    expect(del.statusCode).toBe(200);
    expect(del.json().data).toMatchObject({ id: p.id, deleted: true });
    expect((await inject('GET', `/api/projects/${p.id}`)).json().error.code).toBe('PROJECT_NOT_FOUND');
    expect((await inject('GET', `/api/tasks/${task.json().data.id}`)).statusCode).toBe(404);
    const rows = await stack.db.query('SELECT count(*)::int AS n FROM tasks WHERE project_id = $1', [p.id]);
    expect(rows.rows[0].n).toBe(0);
  });

  test('duplicate name gives 409 PROJECT_EXISTS (case-insensitive)', async () => {
    expect((await inject('POST', '/api/projects', { name: 'Dup', repository: { url: repo } })).statusCode).toBe(201);
    const again = await inject('POST', '/api/projects', { name: 'dup', repository: { url: repo } });
    expect(again.statusCode).toBe(409);
    expect(again.json()).toMatchObject({ success: false, error: { code: 'PROJECT_EXISTS' } });
  });

  // an NFD name looked the same as its NFC twin and became a second project; control and bidi characters in a name
  // reach terminals (the CLI prints names) and file lists as they are
  test('names are compared in Unicode NFC (a decomposed twin is a 409) and control or bidi characters are refused', async () => {
    const nfc = 'Caf\u00e9 board';
    const created = await inject('POST', '/api/projects', { name: nfc, repository: { url: repo } });
    expect(created.statusCode).toBe(201);
    const twin = await inject('POST', '/api/projects', { name: 'CAFE\u0301 BOARD', repository: { url: repo } });
    expect(twin.json()).toMatchObject({ success: false, error: { code: 'PROJECT_EXISTS' } });
    // stored composed, whatever form it was sent in
    const other = await inject('POST', '/api/projects', { name: 'Re\u0301sume\u0301', repository: { url: repo } });
    expect(other.json().data.name).toBe('R\u00e9sum\u00e9');
    const renamed = await inject('PATCH', `/api/projects/${other.json().data.id}`, { name: 'cafe\u0301 board' });
    expect(renamed.json()).toMatchObject({ success: false, error: { code: 'PROJECT_EXISTS' } });
    for (const name of ['ctl\u0007bell', 'esc\u001b[31mred', 'x\u202eexe.txt', 'iso\u2066late', 'c1\u0085x']) {
      const bad = await inject('POST', '/api/projects', { name, repository: { url: repo } });
      expect({ name, status: bad.statusCode, code: bad.json().error?.code, field: Object.keys(bad.json().error?.details ?? {}) }).toEqual({ name, status: 400, code: 'VALIDATION_ERROR', field: ['name'] });
    }
  });

  test('missing repository.url and other bad bodies give VALIDATION_ERROR with field details', async () => {
    const missing = await inject('POST', '/api/projects', { name: 'x', repository: {} });
    expect(missing.statusCode).toBe(400);
    expect(missing.json().error.code).toBe('VALIDATION_ERROR');
    expect(missing.json().error.details).toHaveProperty(['repository.url']);

    const noName = await inject('POST', '/api/projects', { repository: { url: repo } });
    expect(noName.json().error.details).toHaveProperty('name');

    const wrongType = await inject('POST', '/api/projects', { name: 42, repository: { url: repo } });
    expect(wrongType.statusCode).toBe(400);
    expect(wrongType.json().error.details.name).toMatch(/string/);

    const unknownKey = await inject('POST', '/api/projects', { name: 'u', repository: { url: repo }, colour: 'red' });
    expect(unknownKey.statusCode).toBe(400);
    expect(unknownKey.json().error.details).toHaveProperty('colour');
  });

  test('a local path that is not a git repository is refused', async () => {
    const plain = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-plain-'));
    const r = await inject('POST', '/api/projects', { name: 'plain', repository: { url: plain } });
    expect(r.statusCode).toBe(400);
    expect(r.json().error).toMatchObject({ code: 'VALIDATION_ERROR', details: { 'repository.url': 'is not a git repository' } });
    const rel = await inject('POST', '/api/projects', { name: 'rel', repository: { url: 'relative/path' } });
    expect(rel.statusCode).toBe(400);
    const badPath = await inject('POST', '/api/projects', { name: 'gp', repository: { url: 'https://example.com/o/r.git' }, git_repo_path: plain });
    expect(badPath.json().error.details).toHaveProperty('git_repo_path');
  });

  test('a remote (file:// bare) repository is cloned into ARMADA_HOME/repos by a worker activity', async () => {
    const bare = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-bare-'));
    execFileSync('git', ['clone', '-q', '--bare', repo, bare]);
    const r = await inject('POST', '/api/projects', { name: 'cloned', repository: { url: `file://${bare}` } });
    expect(r.statusCode).toBe(201);
    const id = r.json().data.id;
    expect(['cloning', 'ready']).toContain(r.json().data.repository.status);
    const ready = await eventually(async () => {
      const p = (await inject('GET', `/api/projects/${id}`)).json().data;
      return p.repository.status === 'ready' ? p : undefined;
    });
    expect(ready.git_repo_path).toBe(path.join(stack.config.home, 'repos', id));
    expect(fs.existsSync(path.join(ready.git_repo_path, 'README.md'))).toBe(true);
    expect(ready.repository.lastSync).not.toBeNull();
  });

  test('unknown ids give PROJECT_NOT_FOUND', async () => {
    for (const [method, url, body] of [
      ['GET', '/api/projects/nope'],
      ['PATCH', '/api/projects/nope', { name: 'z' }],
      ['DELETE', '/api/projects/nope'],
      ['GET', '/api/projects/nope/stats'],
      ['GET', '/api/projects/nope/tasks'],
    ] as const) {
      const r = await inject(method, url, body);
      expect(r.statusCode).toBe(404);
      expect(r.json().error.code).toBe('PROJECT_NOT_FOUND');
    }
  });

  test('stats count tasks by status', async () => {
    const p = (await inject('POST', '/api/projects', { name: 'Stats', repository: { url: repo } })).json().data;
    const ids: string[] = [];
    for (const title of ['a', 'b', 'c']) ids.push((await inject('POST', '/api/tasks', { projectId: p.id, title })).json().data.id);
    await inject('PATCH', `/api/tasks/${ids[0]}`, { status: 'completed' });
    await inject('PATCH', `/api/tasks/${ids[1]}`, { status: 'in_progress' });
    const s = (await inject('GET', `/api/projects/${p.id}/stats`)).json().data;
    expect(s.tasks).toEqual({ total: 3, pending: 1, inProgress: 1, completed: 1, failed: 0 });
    expect(s.attempts).toEqual({ total: 0, successful: 0, failed: 0 });
    expect(s.performance.successRate).toBe(0);
    const detail = (await inject('GET', `/api/projects/${p.id}`)).json().data;
    expect(detail.stats).toMatchObject({ tasks: 3, completedTasks: 1, inProgressTasks: 1 });
  });
});
