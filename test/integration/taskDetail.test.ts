/**
 * GET /api/tasks/:id read from the database (Cache-Control: no-cache) and through the read cache: the body is the
 * exact text it was before the detail became one round trip (the expected strings below were recorded from the
 * two-query version), for a task with attempts in every state, fractional costs, microsecond timestamps and stats.
 */
import { makeGitRepo, startTestStack, type TestStack } from '../support/harness';

let stack: TestStack;
let projectId: string;
let repo: string;

const get = (url: string, headers: Record<string, string> = {}) => stack.app('task').inject({ method: 'GET', url, headers });
/** The body's text with the one field that changes per request (meta.timestamp) fixed. */
const stable = (body: string) => body.replace(/"timestamp":"[^"]+"/, '"timestamp":"T"');

beforeAll(async () => {
  stack = await startTestStack({ services: ['task'] });
  repo = makeGitRepo();
  projectId = (await stack.app('task').inject({ method: 'POST', url: '/api/projects', payload: { name: 'Detail', repository: { url: repo } } })).json().data.id;
  await stack.db.query(
    `INSERT INTO tasks (id, project_id, title, description, status, priority, labels, assignee, created_by, metadata, created_at, updated_at, completed_at)
     VALUES ('detail-done', $1, 'Finished "task"', 'line 1\nline 2 ünïcödé', 'completed', 'high', ARRAY['b', 'a'], 'ann@example.com', 'bob@example.com',
             '{"nested": {"k": [1, 2.5, null]}, "repository": "overridden", "z": true}', '2026-01-02T03:04:05.678901Z', '2026-01-03T00:00:00Z', '2026-01-04T12:34:56.789Z'),
            ('detail-live', $1, 'Running', '', 'in_progress', 'low', '{}', NULL, 'bob@example.com', '{}', '2026-02-01T00:00:00Z', '2026-02-01T00:00:00Z', NULL),
            ('detail-none', $1, 'No attempts', '', 'pending', 'medium', '{}', NULL, 'bob@example.com', '{"a": 1}', '2026-03-01T00:00:00.5Z', '2026-03-01T00:00:00.5Z', NULL)`,
    [projectId],
  );
  await stack.db.query(
    `INSERT INTO attempts (id, task_id, number, llm, status, branch, worktree_path, total_cost, files_changed, lines_added, lines_removed, started_at, completed_at, cancelled_at)
     VALUES ('d-a1', 'detail-done', 1, 'claude', 'completed', 'armada/task-detail-done-attempt-1', '/w/1', 0.1, 3, 40, 2, '2026-01-02T10:00:00.123456Z', '2026-01-02T10:01:30.654321Z', NULL),
            ('d-a2', 'detail-done', 2, 'codex', 'failed', 'armada/task-detail-done-attempt-2', '/w/2', 0.2, 0, 0, 0, '2026-01-02T11:00:00Z', '2026-01-02T11:00:07.25Z', NULL),
            ('d-a3', 'detail-done', 3, 'gemini', 'cancelled', 'armada/task-detail-done-attempt-3', NULL, 0.7, 1, 1, 1, '2026-01-02T12:00:00Z', NULL, '2026-01-02T12:02:00Z'),
            ('d-a4', 'detail-done', 4, 'claude', 'created', NULL, NULL, 0, 0, 0, 0, NULL, NULL, NULL),
            ('d-a5', 'detail-done', 5, 'claude', 'completed', 'armada/task-detail-done-attempt-5', '/w/5', 1.23456789012345, 12, 345, 67, '2026-01-03T00:00:00Z', '2026-01-03T01:00:00.001Z', NULL),
            ('l-a1', 'detail-live', 1, 'claude', 'completed', 'armada/task-detail-live-attempt-1', '/w/l1', 0.05, 1, 2, 3, '2026-02-01T00:00:00Z', '2026-02-01T00:00:10Z', NULL),
            ('l-a2', 'detail-live', 2, 'claude', 'running', 'armada/task-detail-live-attempt-2', '/w/l2', 0.01, 0, 0, 0, now() - interval '90 seconds', NULL, NULL)`,
  );
});
afterAll(async () => {
  await stack.close();
});

describe('task detail', () => {
  test('a task with completed, failed, cancelled and unstarted attempts: the same bytes as before, read from the database and from the cache', async () => {
    const expected = EXPECTED_DONE.replaceAll('REPO', repo).replaceAll('PROJECT', projectId);
    const fresh = await get('/api/tasks/detail-done', { 'cache-control': 'no-cache' });
    expect(fresh.statusCode).toBe(200);
    expect(fresh.headers['x-armada-cache']).toBe('bypass');
    expect(stable(fresh.body)).toBe(expected);
    await get('/api/tasks/detail-done');
    const cached = await get('/api/tasks/detail-done');
    expect(cached.headers['x-armada-cache']).toBe('hit');
    expect(stable(cached.body)).toBe(expected);
  });

  test('a running attempt: its duration runs up to now, the rest is the same bytes as before', async () => {
    const r = await get('/api/tasks/detail-live', { 'cache-control': 'no-cache' });
    expect(r.statusCode).toBe(200);
    const data = r.json().data;
    expect(data.attempts[1].duration).toBeGreaterThanOrEqual(90);
    expect(data.attempts[1].duration).toBeLessThan(600);
    expect(data.stats.totalDuration).toBeCloseTo(10 + data.attempts[1].duration, 6);
    const masked = stable(r.body)
      .replace(/"duration":(?!10,)[0-9.]+/, '"duration":D')
      .replace(/"totalDuration":[0-9.]+/, '"totalDuration":D')
      .replace(/"startedAt":"[^"]+","completedAt":null/, '"startedAt":"S","completedAt":null');
    expect(masked).toBe(EXPECTED_LIVE.replaceAll('REPO', repo).replaceAll('PROJECT', projectId));
  });

  test('a task without attempts, and an unknown task', async () => {
    const r = await get('/api/tasks/detail-none', { 'cache-control': 'no-cache' });
    expect(stable(r.body)).toBe(EXPECTED_NONE.replaceAll('REPO', repo).replaceAll('PROJECT', projectId));
    const missing = await get('/api/tasks/no-such-task', { 'cache-control': 'no-cache' });
    expect(missing.statusCode).toBe(404);
    expect(missing.json().error.code).toBe('TASK_NOT_FOUND');
  });
});

const EXPECTED_DONE = String.raw`{"success":true,"data":{"id":"detail-done","projectId":"PROJECT","title":"Finished \"task\"","description":"line 1\nline 2 ünïcödé","status":"completed","priority":"high","labels":["b","a"],"assignee":"ann@example.com","createdBy":"bob@example.com","createdAt":"2026-01-02T03:04:05.678Z","updatedAt":"2026-01-03T00:00:00.000Z","completedAt":"2026-01-04T12:34:56.789Z","metadata":{"z":true,"nested":{"k":[1,2.5,null]},"repository":"REPO","branch":"armada/task-detail-done-attempt-5","worktreePath":"/w/5"},"attempts":[{"id":"d-a1","number":1,"llm":"claude","status":"completed","branch":"armada/task-detail-done-attempt-1","startedAt":"2026-01-02T10:00:00.123Z","completedAt":"2026-01-02T10:01:30.654Z","duration":90.531,"cost":0.1,"filesChanged":3,"linesAdded":40,"linesRemoved":2},{"id":"d-a2","number":2,"llm":"codex","status":"failed","branch":"armada/task-detail-done-attempt-2","startedAt":"2026-01-02T11:00:00.000Z","completedAt":"2026-01-02T11:00:07.250Z","duration":7.25,"cost":0.2,"filesChanged":0,"linesAdded":0,"linesRemoved":0},{"id":"d-a3","number":3,"llm":"gemini","status":"cancelled","branch":"armada/task-detail-done-attempt-3","startedAt":"2026-01-02T12:00:00.000Z","completedAt":null,"duration":120,"cost":0.7,"filesChanged":1,"linesAdded":1,"linesRemoved":1},{"id":"d-a4","number":4,"llm":"claude","status":"created","branch":null,"startedAt":null,"completedAt":null,"duration":null,"cost":0,"filesChanged":0,"linesAdded":0,"linesRemoved":0},{"id":"d-a5","number":5,"llm":"claude","status":"completed","branch":"armada/task-detail-done-attempt-5","startedAt":"2026-01-03T00:00:00.000Z","completedAt":"2026-01-03T01:00:00.001Z","duration":3600.001,"cost":1.23456789012345,"filesChanged":12,"linesAdded":345,"linesRemoved":67}],"stats":{"totalAttempts":5,"successfulAttempts":2,"failedAttempts":1,"totalCost":2.23456789012345,"totalDuration":3817.782}},"meta":{"timestamp":"T","version":"0.1.0"}}`;
const EXPECTED_LIVE = '{"success":true,"data":{"id":"detail-live","projectId":"PROJECT","title":"Running","description":"","status":"in_progress","priority":"low","labels":[],"assignee":null,"createdBy":"bob@example.com","createdAt":"2026-02-01T00:00:00.000Z","updatedAt":"2026-02-01T00:00:00.000Z","completedAt":null,"metadata":{"repository":"REPO","branch":"armada/task-detail-live-attempt-2","worktreePath":"/w/l2"},"attempts":[{"id":"l-a1","number":1,"llm":"claude","status":"completed","branch":"armada/task-detail-live-attempt-1","startedAt":"2026-02-01T00:00:00.000Z","completedAt":"2026-02-01T00:00:10.000Z","duration":10,"cost":0.05,"filesChanged":1,"linesAdded":2,"linesRemoved":3},{"id":"l-a2","number":2,"llm":"claude","status":"running","branch":"armada/task-detail-live-attempt-2","startedAt":"S","completedAt":null,"duration":D,"cost":0.01,"filesChanged":0,"linesAdded":0,"linesRemoved":0}],"stats":{"totalAttempts":2,"successfulAttempts":1,"failedAttempts":0,"totalCost":0.060000000000000005,"totalDuration":D}},"meta":{"timestamp":"T","version":"0.1.0"}}';
const EXPECTED_NONE = '{"success":true,"data":{"id":"detail-none","projectId":"PROJECT","title":"No attempts","description":"","status":"pending","priority":"medium","labels":[],"assignee":null,"createdBy":"bob@example.com","createdAt":"2026-03-01T00:00:00.500Z","updatedAt":"2026-03-01T00:00:00.500Z","completedAt":null,"metadata":{"a":1,"repository":"REPO","branch":"main","worktreePath":null},"attempts":[],"stats":{"totalAttempts":0,"successfulAttempts":0,"failedAttempts":0,"totalCost":0,"totalDuration":0}},"meta":{"timestamp":"T","version":"0.1.0"}}';
