import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Faults } from '../../lib/faults';
import { createLogger } from '../../lib/logger';
import { openSecret } from '../../lib/secretBox';
import { hostQueue } from '../../lib/temporal/queues';
import type { RunningWorkers } from '../../workers/createWorker';
import { recordHistory } from '../support/attemptHelpers';
import { startFakeCodehost, type FakeCodehost } from '../support/fakeCodehost';
import { eventually, makeGitRepo, startStackWorkers, startTestStack, type TestStack } from '../support/harness';

const gitEnv = { ...process.env, GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@example.com', GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@example.com' };
const g = (cwd: string, ...args: string[]) => execFileSync('git', args, { cwd, stdio: 'pipe', env: gitEnv }).toString().trim();

let stack: TestStack;
let workers: RunningWorkers;
/** The worker's test-only fault hooks (lib/faults.ts), set by the test that needs one. */
const faults: Faults = {};
let fake: FakeCodehost;
let tmp: string;
let bare: string;
let repo: string;
let projectId: string;
let taskId: string;
/** Every log line the services and the worker write during the file, at trace level. */
const logLines: string[] = [];
const captureLogger = createLogger('trace', 'armada', { write: (line: string) => void logLines.push(line) });

/** An attempt of the task with a branch holding one commit in a worktree of the project repository. */
async function makeAttempt(n: number): Promise<{ id: string; branch: string; commit: string }> {
  const id = `att-${n}-${Math.random().toString(36).slice(2, 8)}`;
  const branch = `armada/task-${taskId}-attempt-${n}`;
  const wt = path.join(tmp, `wt-${n}`);
  g(repo, 'worktree', 'add', '-q', '-b', branch, wt, 'main');
  fs.writeFileSync(path.join(wt, `change-${n}.txt`), `attempt ${n}\n`);
  g(wt, 'add', '-A');
  g(wt, 'commit', '-q', '-m', `attempt ${n} work`);
  await stack.db.query(
    `INSERT INTO attempts (id, task_id, number, llm, status, branch, base_branch, worktree_path, host_queue) VALUES ($1, $2, $3, 'claude', 'completed', $4, 'main', $5, $6)`,
    [id, taskId, n, branch, wt, hostQueue(stack.config.temporal.taskQueue)],
  );
  return { id, branch, commit: g(wt, 'rev-parse', 'HEAD') };
}

/** An attempt of the task made from `base` (recorded as its base commit) whose worktree `work` shapes. */
async function makeAttemptAt(n: number, base: string, work: (wt: string) => void): Promise<{ id: string; branch: string }> {
  const id = `att-${n}-${Math.random().toString(36).slice(2, 8)}`;
  const branch = `armada/task-${taskId}-attempt-${n}`;
  const wt = path.join(tmp, `wt-${n}`);
  g(repo, 'worktree', 'add', '-q', '-b', branch, wt, base);
  work(wt);
  await stack.db.query(
    `INSERT INTO attempts (id, task_id, number, llm, status, branch, base_branch, base_commit, worktree_path, host_queue)
     VALUES ($1, $2, $3, 'claude', 'completed', $4, 'main', $5, $6, $7)`,
    [id, taskId, n, branch, base, wt, hostQueue(stack.config.temporal.taskQueue)],
  );
  return { id, branch };
}

beforeAll(async () => {
  tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'armada-codehost-')));
  bare = path.join(tmp, 'origin.git');
  g(tmp, 'init', '-q', '--bare', '-b', 'main', bare);
  repo = makeGitRepo();
  g(repo, 'remote', 'add', 'origin', bare);
  g(repo, 'push', '-q', 'origin', 'main');
  fake = await startFakeCodehost([{ owner: 'acme', name: 'widgets', bare, defaultBranch: 'main', private: true }]);
  stack = await startTestStack({
    services: ['task'],
    worker: false,
    env: { ARMADA_CODEHOST_API_URL: fake.url, ARMADA_CODEHOST_OAUTH_URL: `${fake.url}/`, ARMADA_CODEHOST_CLIENT_ID: fake.clientId },
    file: { codehost: { pollIntervalMs: 300, pushPickupMs: 2000 } },
    logger: captureLogger,
  });
  workers = await startStackWorkers(stack, { logger: captureLogger, faults });
  const project = await inject('POST', '/api/projects', { name: 'widgets', repository: { url: 'https://codehost.example/acme/widgets.git' }, git_repo_path: repo });
  expect(project.statusCode).toBe(201);
  projectId = project.json().data.id;
  const task = await inject('POST', '/api/tasks', { projectId, title: 'Add the widget' });
  expect(task.statusCode).toBe(201);
  taskId = task.json().data.id;
});

afterAll(async () => {
  await workers?.stop();
  await stack?.close();
  await fake?.close();
  fs.rmSync(tmp, { recursive: true, force: true });
  fs.rmSync(repo, { recursive: true, force: true });
});

function inject(method: 'GET' | 'POST', url: string, payload?: unknown) {
  return stack.app('task').inject({ method, url, payload: payload as object });
}

const remoteHasBranch = (branch: string) => {
  try {
    return g(tmp, '--git-dir', bare, 'rev-parse', '--verify', `refs/heads/${branch}`);
  } catch {
    return undefined;
  }
};

/** Where and how often the push activity of an attempt's latest push workflow ran. */
async function pushHistory(attemptId: string): Promise<{ taskQueue?: string | null; attempts: number[] }> {
  const history = await (await stack.temporal.client()).workflow.getHandle(`push:${attemptId}`).fetchHistory();
  const events = history.events ?? [];
  const scheduled = events.find((e) => e.activityTaskScheduledEventAttributes)?.activityTaskScheduledEventAttributes;
  const attempts = events.filter((e) => e.activityTaskStartedEventAttributes).map((e) => e.activityTaskStartedEventAttributes?.attempt ?? 0);
  return { taskQueue: scheduled?.taskQueue?.name, attempts };
}

describe('code hosting', () => {
  let first: { id: string; branch: string; commit: string };

  test('without sign-in, create-pr is codehost_auth_required and nothing is pushed', async () => {
    first = await makeAttempt(1);
    const res = await inject('POST', `/api/task-attempts/${first.id}/create-pr`, { title: 'Widget' });
    expect(res.statusCode).toBe(401);
    expect(res.json()).toEqual({ success: false, error: 'codehost_auth_required', message: expect.any(String) });
    expect(remoteHasBranch(first.branch)).toBeUndefined();
    const missing = await inject('POST', '/api/task-attempts/nope/create-pr', {});
    expect(missing.statusCode).toBe(404);
    expect(missing.json()).toMatchObject({ success: false, error: 'attempt_not_found' });
  });

  test('device flow: authorization_pending, then the token once, stored sealed', async () => {
    const start = await inject('POST', '/api/auth/codehost/device');
    expect(start.statusCode).toBe(200);
    const d = start.json().data;
    expect(d).toMatchObject({ verification_uri: `${fake.url}/login/device`, expires_in: 900, interval: 1 });
    expect(typeof d.device_code).toBe('string');
    expect(typeof d.user_code).toBe('string');

    const pending = await inject('POST', '/api/auth/codehost/device/poll', { device_code: d.device_code });
    expect(pending.statusCode).toBe(202);
    expect(pending.json()).toEqual({ success: false, error: 'authorization_pending', message: expect.any(String) });

    fake.authorize(d.user_code);
    const done = await inject('POST', '/api/auth/codehost/device/poll', { device_code: d.device_code });
    expect(done.statusCode).toBe(200);
    expect(done.json().data).toEqual({ access_token: fake.token, token_type: 'bearer', scope: 'repo' });

    const again = await inject('POST', '/api/auth/codehost/device/poll', { device_code: d.device_code });
    expect(again.statusCode).toBe(409);
    expect(again.json().error).toBe('device_code_used');
    expect(again.body).not.toContain(fake.token);

    const { rows } = await stack.db.query('SELECT token_sealed, scope FROM codehost_tokens');
    expect(rows).toHaveLength(1);
    expect(rows[0].token_sealed).not.toContain(fake.token);
    expect(openSecret(stack.keys.encryption, rows[0].token_sealed)).toBe(fake.token);
    const flows = await stack.db.query('SELECT device_code_hash FROM codehost_device_flows');
    expect(flows.rows[0].device_code_hash).not.toBe(d.device_code);

    const late = await inject('POST', '/api/auth/codehost/device');
    await stack.db.query(`UPDATE codehost_device_flows SET expires_at = now() - interval '1 second' WHERE status = 'pending'`);
    const expired = await inject('POST', '/api/auth/codehost/device/poll', { device_code: late.json().data.device_code });
    expect(expired.statusCode).toBe(400);
    expect(expired.json().error).toBe('expired_token');

    const unknown = await inject('POST', '/api/auth/codehost/device/poll', { device_code: 'never-issued' });
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json()).toMatchObject({ success: false, error: 'bad_verification_code' });
    const invalid = await inject('POST', '/api/auth/codehost/device/poll', {});
    expect(invalid.statusCode).toBe(400);
    expect(invalid.json()).toMatchObject({ success: false, error: 'validation_error' });
  });

  test('create-pr pushes the attempt branch to origin and opens the pull request; merging completes the task', async () => {
    const res = await inject('POST', `/api/task-attempts/${first.id}/create-pr`, { title: 'Widget', body: 'Adds it', draft: true });
    expect(res.statusCode).toBe(200);
    const pr = res.json().data;
    expect(pr).toMatchObject({ number: 1, title: 'Widget', body: 'Adds it', state: 'open', author: 'signed-in-user', head: first.branch, base: 'main' });
    expect(pr.url).toBe(`${fake.url}/repos/acme/widgets/pulls/1`);
    expect(pr.htmlUrl).toContain('/acme/widgets/pull/1');
    expect(remoteHasBranch(first.branch)).toBe(first.commit);
    // the push ran as an activity on the attempt's host queue, not in the request
    expect(await pushHistory(first.id)).toEqual({ taskQueue: hostQueue(stack.config.temporal.taskQueue), attempts: [1] });
    const call = fake.requests.find((r) => r.method === 'POST' && r.path === '/repos/acme/widgets/pulls');
    expect(call?.authorization).toBe(`Bearer ${fake.token}`);
    expect(call?.body).toMatchObject({ head: first.branch, base: 'main', draft: true });
    const row = await stack.db.query('SELECT owner, repo, number, state FROM attempt_pull_requests WHERE attempt_id = $1', [first.id]);
    expect(row.rows[0]).toEqual({ owner: 'acme', repo: 'widgets', number: 1, state: 'open' });

    // still open after a few polls
    await new Promise((r) => setTimeout(r, 800));
    expect((await inject('GET', `/api/tasks/${taskId}`)).json().data.status).toBe('pending');

    fake.merge('acme', 'widgets', 1);
    await eventually(async () => (await inject('GET', `/api/tasks/${taskId}`)).json().data.status === 'completed', 20_000, 200);
    const merged = await stack.db.query('SELECT state, merged_at FROM attempt_pull_requests WHERE attempt_id = $1', [first.id]);
    expect(merged.rows[0].state).toBe('merged');
    expect(merged.rows[0].merged_at).toBeInstanceOf(Date);
    const events = await stack.db.query(`SELECT type FROM events WHERE type IN ('task.status_changed', 'task.completed') AND data->>'taskId' = $1`, [taskId]);
    expect(events.rows.map((e) => e.type).sort()).toEqual(['task.completed', 'task.status_changed']);
    const handle = (await stack.temporal.client()).workflow.getHandle(`pr-watch:${first.id}`);
    expect(await handle.result()).toBe('merged');
    await recordHistory(stack, handle.workflowId, 'pr-watch-merged');
    await recordHistory(stack, `push:${first.id}`, 'push-branch-pushed');
  });

  test('create-pr of an attempt with no changes is 409 no_changes before any push: the remote has no such branch, the code host got no pull request', async () => {
    const base = g(repo, 'rev-parse', 'main');
    // one attempt whose agent committed nothing, one whose commits add a file and take it out again (net no change,
    // as the board's filesChanged 0 records it)
    const idle = await makeAttemptAt(6, base, () => undefined);
    const undone = await makeAttemptAt(7, base, (wt) => {
      fs.writeFileSync(path.join(wt, 'tmp.txt'), 'x\n');
      g(wt, 'add', '-A');
      g(wt, 'commit', '-q', '-m', 'add');
      g(wt, 'rm', '-q', 'tmp.txt');
      g(wt, 'commit', '-q', '-m', 'remove');
    });
    const pullRequestsBefore = fake.requests.filter((r) => r.method === 'POST' && r.path === '/repos/acme/widgets/pulls').length;
    for (const a of [idle, undone]) {
      const res = await inject('POST', `/api/task-attempts/${a.id}/create-pr`, { title: 'Nothing' });
      expect({ attempt: a.branch, status: res.statusCode }).toEqual({ attempt: a.branch, status: 409 });
      expect(res.json()).toEqual({ success: false, error: 'no_changes', message: expect.stringContaining('no changes') });
      expect(remoteHasBranch(a.branch)).toBeUndefined();
      // refused on the attempt's host before the push, once: not a failure that retries
      expect(await pushHistory(a.id)).toEqual({ taskQueue: hostQueue(stack.config.temporal.taskQueue), attempts: [1] });
    }
    expect(fake.requests.filter((r) => r.method === 'POST' && r.path === '/repos/acme/widgets/pulls')).toHaveLength(pullRequestsBefore);
    expect((await stack.db.query('SELECT 1 FROM attempt_pull_requests WHERE attempt_id = ANY($1)', [[idle.id, undone.id]])).rowCount).toBe(0);
  });

  test('create-pr of an attempt whose worktree and branch were removed (a merge with cleanup) is 409 worktree_removed at once, nothing pushed', async () => {
    const base = g(repo, 'rev-parse', 'main');
    const gone = await makeAttemptAt(8, base, (wt) => {
      fs.writeFileSync(path.join(wt, 'kept.txt'), 'x\n');
      g(wt, 'add', '-A');
      g(wt, 'commit', '-q', '-m', 'add');
    });
    // what a merge's cleanup leaves: the worktree and the branch gone, the row marked
    g(repo, 'worktree', 'remove', '--force', path.join(tmp, 'wt-8'));
    g(repo, 'branch', '-D', gone.branch);
    await stack.db.query('UPDATE attempts SET cleaned_up = true WHERE id = $1', [gone.id]);
    const pullRequestsBefore = fake.requests.filter((r) => r.method === 'POST' && r.path === '/repos/acme/widgets/pulls').length;
    const res = await inject('POST', `/api/task-attempts/${gone.id}/create-pr`, { title: 'Gone' });
    expect(res.statusCode).toBe(409);
    expect(res.json()).toEqual({ success: false, error: 'worktree_removed', message: expect.stringContaining('were removed') });
    expect(remoteHasBranch(gone.branch)).toBeUndefined();
    await expect(pushHistory(gone.id)).rejects.toThrow(/workflow not found/); // no push was started
    expect(fake.requests.filter((r) => r.method === 'POST' && r.path === '/repos/acme/widgets/pulls')).toHaveLength(pullRequestsBefore);
  });

  test('create-pr with a blank (white space only) title is a 400 naming title before anything is pushed', async () => {
    const base = g(repo, 'rev-parse', 'main');
    const a = await makeAttemptAt(20, base, (wt) => {
      fs.writeFileSync(path.join(wt, 'blank-title.txt'), 'x\n');
      g(wt, 'add', '-A');
      g(wt, 'commit', '-q', '-m', 'add');
    });
    const pullRequestsBefore = fake.requests.filter((r) => r.method === 'POST' && r.path === '/repos/acme/widgets/pulls').length;
    for (const title of [' ', '\t\n', '\u00a0\u3000']) {
      const res = await inject('POST', `/api/task-attempts/${a.id}/create-pr`, { title });
      expect([JSON.stringify(title), res.statusCode]).toEqual([JSON.stringify(title), 400]);
      expect(res.json()).toMatchObject({ success: false, error: 'validation_error' });
      expect(JSON.stringify(res.json())).toMatch(/title/);
    }
    expect(remoteHasBranch(a.branch)).toBeUndefined();
    await expect(pushHistory(a.id)).rejects.toThrow(/workflow not found/); // no push was started
    expect(fake.requests.filter((r) => r.method === 'POST' && r.path === '/repos/acme/widgets/pulls')).toHaveLength(pullRequestsBefore);
  });

  test('list pulls (state, page, limit) and repository info', async () => {
    fake.addPull('acme', 'widgets', { title: 'Other', head: 'feature/x' });
    const open = await inject('GET', `/api/projects/${projectId}/codehost/pulls`);
    expect(open.statusCode).toBe(200);
    expect(open.json().data.map((p: { title: string }) => p.title)).toEqual(['Other']);
    // the code host's whole-second `…Z` comes out in the API's one timestamp form
    expect(open.json().data[0].createdAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.000Z$/);
    const all = await inject('GET', `/api/projects/${projectId}/codehost/pulls?state=all&page=1&limit=5`);
    expect(all.json().data.map((p: { number: number; state: string }) => [p.number, p.state])).toEqual([
      [1, 'closed'],
      [2, 'open'],
    ]);
    expect(fake.requests.some((r) => r.path === '/repos/acme/widgets/pulls?state=all&page=1&per_page=5')).toBe(true);
    expect((await inject('GET', `/api/projects/${projectId}/codehost/pulls?limit=101`)).json()).toMatchObject({ success: false, error: 'validation_error' });

    const info = await inject('GET', `/api/projects/${projectId}/codehost/repository`);
    expect(info.statusCode).toBe(200);
    expect(info.json().data).toEqual({
      owner: 'acme',
      repo: 'widgets',
      fullName: 'acme/widgets',
      defaultBranch: 'main',
      private: true,
      htmlUrl: `${fake.url}/acme/widgets`,
      cloneUrl: `${fake.url}/acme/widgets.git`,
    });
    const none = await inject('GET', '/api/projects/missing/codehost/repository');
    expect(none.statusCode).toBe(404);
    expect(none.json()).toEqual({ success: false, error: 'project_not_found', message: expect.any(String) });

    // a project whose repository has no code-host origin: a valid request the project's state refuses (409)
    const local = (await inject('POST', '/api/projects', { name: 'Local only', repository: { url: makeGitRepo() } })).json().data.id;
    for (const url of [`/api/projects/${local}/codehost/repository`, `/api/projects/${local}/codehost/pulls`]) {
      const res = await inject('GET', url);
      expect(res.statusCode).toBe(409);
      expect(res.json()).toEqual({ success: false, error: 'repository_not_on_codehost', message: expect.any(String) });
    }
  });

  test('attach-pr attaches an existing pull request; an unknown one is pr_not_found', async () => {
    const second = await makeAttempt(2);
    const res = await inject('POST', `/api/task-attempts/${second.id}/attach-pr`, { owner: 'acme', repo: 'widgets', prNumber: 2 });
    expect(res.statusCode).toBe(200);
    const data = res.json().data;
    expect(data).toMatchObject({ attemptId: second.id, prNumber: 2 });
    expect(data.prUrl).toContain('/acme/widgets/pull/2');
    expect(Number.isNaN(Date.parse(data.attachedAt))).toBe(false);
    const row = await stack.db.query('SELECT number, state FROM attempt_pull_requests WHERE attempt_id = $1', [second.id]);
    expect(row.rows[0]).toEqual({ number: 2, state: 'open' });

    // `.` and `..` are dot segments: the code host's URL (/repos/{owner}/{repo}/…) would resolve them to another resource
    for (const [owner, repo] of [['..', 'widgets'], ['acme', '..'], ['.', 'widgets'], ['acme', '.']]) {
      const dots = await inject('POST', `/api/task-attempts/${second.id}/attach-pr`, { owner, repo, prNumber: 2 });
      expect({ owner, repo, status: dots.statusCode }).toEqual({ owner, repo, status: 400 });
    }
    const missing = await inject('POST', `/api/task-attempts/${second.id}/attach-pr`, { owner: 'acme', repo: 'widgets', prNumber: 99 });
    expect(missing.statusCode).toBe(404);
    expect(missing.json()).toEqual({ success: false, error: 'pr_not_found', message: expect.any(String) });
  });

  test('attach-pr to an attempt deleted while the host is asked is 404 attempt_not_found and records nothing (it was a 500: the insert failed its foreign key)', async () => {
    const doomed = await makeAttempt(11);
    // the delete is under way (its transaction holds the row) when the route reads the attempt, and commits after
    const deleting = await stack.db.connect();
    try {
      await deleting.query('BEGIN');
      await deleting.query('DELETE FROM attempts WHERE id = $1', [doomed.id]);
      const answer = inject('POST', `/api/task-attempts/${doomed.id}/attach-pr`, { owner: 'acme', repo: 'widgets', prNumber: 2 });
      await eventually(async () => (await stack.db.query("SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'")).rowCount);
      await deleting.query('COMMIT');
      const res = await answer;
      expect(res.statusCode).toBe(404);
      expect(res.json()).toEqual({ success: false, error: 'attempt_not_found', message: expect.stringContaining(`Attempt ${doomed.id} not found`) });
    } finally {
      await deleting.query('ROLLBACK'); // a no-op after the COMMIT
      deleting.release();
    }
    expect((await stack.db.query('SELECT 1 FROM attempt_pull_requests WHERE attempt_id = $1', [doomed.id])).rowCount).toBe(0);
  });

  test('webhook registration; a URL outside the documented pattern, or one that does not parse, is invalid_webhook_url', async () => {
    for (const url of ['not a url', 'ftp://hooks.example/x', 'https://user:pw@hooks.example/x']) {
      const bad = await inject('POST', `/api/projects/${projectId}/codehost/webhook`, { events: ['push'], url });
      expect(bad.statusCode).toBe(400);
      expect(bad.json()).toEqual({ success: false, error: 'invalid_webhook_url', message: expect.any(String) });
    }
    const unparsable = await inject('POST', `/api/projects/${projectId}/codehost/webhook`, { events: ['push'], url: 'http://[::1/x' });
    expect(unparsable.statusCode).toBe(400);
    expect(unparsable.json()).toEqual({ success: false, error: 'invalid_webhook_url', message: expect.any(String) });
    const badEvent = await inject('POST', `/api/projects/${projectId}/codehost/webhook`, { events: ['deploy'], url: 'https://hooks.example/x' });
    expect(badEvent.json()).toMatchObject({ success: false, error: 'validation_error' });
    const res = await inject('POST', `/api/projects/${projectId}/codehost/webhook`, { events: ['pull_request', 'push'], url: 'https://hooks.example/armada' });
    expect(res.statusCode).toBe(200);
    const hook = res.json().data;
    expect(hook.createdAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.000Z$/);
    expect(hook).toMatchObject({ url: 'https://hooks.example/armada', events: ['pull_request', 'push'], active: true });
    expect(Number.isInteger(hook.webhookId)).toBe(true);
    expect(fake.hooks).toEqual([{ repo: 'acme/widgets', id: hook.webhookId, events: ['pull_request', 'push'], url: 'https://hooks.example/armada' }]);
  });

  test('answers of another shape (an HTML page, an empty body, a list for an object, a field of another type) are a 502 saying so, never a 500 or a row', async () => {
    const pull = { number: 7, title: 't', body: null, state: 'open', user: { login: 'octo' }, created_at: '2026-01-02T03:04:05Z', html_url: 'https://h/p/7', url: 'https://h/api/p/7', head: { ref: 'x' }, base: { ref: 'main' } };
    const odd = ['<html>Bad gateway</html>', '', 'null', '[]', '{}', '"text"', JSON.stringify({ ...pull, number: '7' }), JSON.stringify({ ...pull, head: null }), JSON.stringify({ ...pull, state: 'draft' }), JSON.stringify({ ...pull, html_url: 'javascript:alert(1)' })];
    const attempt = await makeAttempt(5);
    const calls: [string, () => ReturnType<typeof inject>][] = [
      ['repository', () => inject('GET', `/api/projects/${projectId}/codehost/repository`)],
      ['pulls', () => inject('GET', `/api/projects/${projectId}/codehost/pulls`)],
      ['attach-pr', () => inject('POST', `/api/task-attempts/${attempt.id}/attach-pr`, { owner: 'acme', repo: 'widgets', prNumber: 7 })],
      ['create-pr', () => inject('POST', `/api/task-attempts/${attempt.id}/create-pr`, { title: 'Odd' })],
      ['webhook', () => inject('POST', `/api/projects/${projectId}/codehost/webhook`, { events: ['push'], url: 'https://hooks.example/odd' })],
    ];
    try {
      for (const body of odd) {
        fake.oddAnswer = () => ({ status: 200, body });
        for (const [name, call] of calls) {
          if (name === 'pulls' && body === '[]') continue; // an empty list is a list
          // a list of pulls may hold odd pulls too
          if (name === 'pulls' && body.startsWith('{"number"')) fake.oddAnswer = () => ({ status: 200, body: `[${body}]` });
          const res = await call();
          expect({ name, body, status: res.statusCode }).toEqual({ name, body, status: 502 });
          expect(res.json()).toEqual({ success: false, error: 'codehost_unavailable', message: expect.stringMatching(/^The code host answered .* Armada cannot read \(.+\); check ARMADA_CODEHOST_API_URL$/) });
          fake.oddAnswer = () => ({ status: 200, body });
        }
      }
    } finally {
      fake.oddAnswer = undefined;
    }
    expect((await stack.db.query('SELECT 1 FROM attempt_pull_requests WHERE attempt_id = $1', [attempt.id])).rowCount).toBe(0);
    // and with the host answering as it should, the same calls work
    expect((await inject('GET', `/api/projects/${projectId}/codehost/repository`)).statusCode).toBe(200);
  });

  test('a push that fails while the remote is unreachable is retried on the host queue and lands', async () => {
    const third = await makeAttempt(3);
    const away = `${bare}.away`;
    const pushes: Record<string, unknown>[] = [];
    // the remote is gone for the first try of the push and back for the retry
    faults['pushBranch.beforePush'] = (info) => {
      pushes.push(info);
      if (pushes.length === 1) fs.renameSync(bare, away);
      else if (fs.existsSync(away)) fs.renameSync(away, bare);
    };
    try {
      const res = await inject('POST', `/api/task-attempts/${third.id}/create-pr`, { title: 'Retried push' });
      expect(res.statusCode).toBe(200);
      expect(res.json().data).toMatchObject({ title: 'Retried push', head: third.branch, state: 'open' });
    } finally {
      delete faults['pushBranch.beforePush'];
      if (fs.existsSync(away)) fs.renameSync(away, bare);
    }
    expect(pushes).toHaveLength(2);
    expect(remoteHasBranch(third.branch)).toBe(third.commit);
    expect(await pushHistory(third.id)).toEqual({ taskQueue: hostQueue(stack.config.temporal.taskQueue), attempts: [2] });
  });

  test('a push the remote rejects is push_failed (502) without retries, and no pull request is opened', async () => {
    const fourth = await makeAttempt(4);
    // the remote already has that branch at a commit the attempt's does not contain: the push is not a fast-forward
    g(repo, 'commit', '-q', '--allow-empty', '-m', 'elsewhere');
    g(repo, 'push', '-q', 'origin', `main:refs/heads/${fourth.branch}`);
    const pullsBefore = fake.pulls.get('acme/widgets')?.length ?? 0;
    const res = await inject('POST', `/api/task-attempts/${fourth.id}/create-pr`, { title: 'Rejected' });
    expect(res.statusCode).toBe(502);
    expect(res.json()).toEqual({ success: false, error: 'push_failed', message: expect.stringContaining('Pushing the attempt branch failed') });
    expect((await pushHistory(fourth.id)).attempts).toEqual([1]);
    expect(fake.pulls.get('acme/widgets')?.length ?? 0).toBe(pullsBefore);
  });

  test('create-pr with no worker running: 503 host_unavailable after codehost.pushPickupMs, nothing pushed then or later, no pull request; with a worker back it lands', async () => {
    // before (session 48): it waited with no bound, for as long as no worker ran on the shared queue
    const fifth = await makeAttempt(30);
    const pullsBefore = fake.pulls.get('acme/widgets')?.length ?? 0;
    await workers.stop();
    try {
      const res = await inject('POST', `/api/task-attempts/${fifth.id}/create-pr`, { title: 'No worker' });
      expect([res.statusCode, res.headers['retry-after'], res.json()]).toEqual([
        503,
        '1',
        { success: false, error: 'host_unavailable', message: `No worker (queue ${stack.config.temporal.taskQueue}) took the push within 2 s: nothing was pushed; try again when a worker is up` },
      ]);
      // its workflow was stopped, so the worker that comes next does not push it
      const handle = (await stack.temporal.client()).workflow.getHandle(`push:${fifth.id}`);
      expect((await handle.describe()).status.name).toBe('TERMINATED');
    } finally {
      workers = await startStackWorkers(stack, { logger: captureLogger, faults });
    }
    await new Promise((r) => setTimeout(r, 1500));
    expect([remoteHasBranch(fifth.branch), fake.pulls.get('acme/widgets')?.length ?? 0]).toEqual([undefined, pullsBefore]);
    const again = await inject('POST', `/api/task-attempts/${fifth.id}/create-pr`, { title: 'No worker' });
    expect([again.statusCode, again.json().data?.head]).toEqual([200, fifth.branch]);
    expect(remoteHasBranch(fifth.branch)).toBe(fifth.commit);
  });

  test('the code-host token never appears in the logs (trace level, services and worker)', () => {
    expect(logLines.some((l) => l.includes('expired_token'))).toBe(true);
    for (const line of logLines) expect(line).not.toContain(fake.token);
  });
});
