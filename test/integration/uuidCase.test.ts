/**
 * UUIDs are case-insensitive (RFC 9562): an id the task service handed out, written in upper or mixed case, names the
 * same row in every path, query and body parameter, and in the stream parameters (`topics`, `/ws` messages). Before,
 * `GET /api/tasks/<UPPER>` was a 404 and `GET /api/tasks?projectId=<UPPER>` listed nothing.
 */
import crypto from 'node:crypto';
import WebSocket from 'ws';
import { insertAttempt } from '../../lib/db/attempts';
import { appendLogs, insertProcess } from '../../lib/db/processes';
import { api } from '../support/attemptHelpers';
import { eventually, startTestStack, type TestStack } from '../support/harness';

let stack: TestStack;
let h: ReturnType<typeof api>;
let base: string;

beforeAll(async () => {
  stack = await startTestStack({ services: ['task'] });
  h = api(stack);
  base = await stack.app('task').listen({ port: 0, host: '127.0.0.1' });
}, 120_000);
afterAll(async () => {
  await stack?.close();
});

const upper = (id: string) => id.toUpperCase();
/** Every other letter in upper case: neither form the service writes. */
const mixed = (id: string) => [...id].map((c, i) => (i % 2 ? c.toUpperCase() : c)).join('');

function socket(path: string): Promise<{ ws: WebSocket; messages: { type: string; [k: string]: unknown }[] }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`${base.replace('http', 'ws')}${path}`);
    const messages: { type: string }[] = [];
    ws.on('message', (d) => messages.push(JSON.parse(String(d))));
    ws.on('open', () => resolve({ ws, messages }));
    ws.on('error', reject);
  });
}

test('projects, tasks, attempts and processes are found by their id in any letter case; ids in bodies and queries too', async () => {
  const p = await h.project();
  const taskId = await h.task(p.id, 'Found in any case');
  expect(p.id).toMatch(/^[0-9a-f-]{36}$/);

  for (const form of [upper, mixed]) {
    const project = await h.inject('GET', `/api/projects/${form(p.id)}`);
    expect(project.statusCode).toBe(200);
    expect(project.json().data.id).toBe(p.id);
    expect((await h.inject('GET', `/api/projects/${form(p.id)}/stats`)).statusCode).toBe(200);
    const task = await h.inject('GET', `/api/tasks/${form(taskId)}`, undefined, { 'cache-control': 'no-cache' });
    expect(task.statusCode).toBe(200);
    expect(task.json().data.id).toBe(taskId);
  }
  const patched = await h.inject('PATCH', `/api/projects/${upper(p.id)}`, { description: 'patched by an upper-case id' });
  expect(patched.statusCode).toBe(200);
  expect(patched.json().data.description).toBe('patched by an upper-case id');
  const patchedTask = await h.inject('PATCH', `/api/tasks/${upper(taskId)}`, { priority: 'high' });
  expect(patchedTask.statusCode).toBe(200);
  expect(patchedTask.json().data).toMatchObject({ id: taskId, priority: 'high' });

  // an upper-case projectId in a body makes the task in that project, stored with the id as handed out
  const created = await h.inject('POST', '/api/tasks', { projectId: upper(p.id), title: 'Made with an upper-case projectId' });
  expect(created.statusCode).toBe(201);
  expect(created.json().data.projectId).toBe(p.id);
  // and a query filter finds the same tasks as the lower-case one
  const lower = (await h.inject('GET', `/api/tasks?projectId=${p.id}`)).json().pagination.total;
  expect(lower).toBe(2);
  expect((await h.inject('GET', `/api/tasks?projectId=${upper(p.id)}`)).json().pagination.total).toBe(lower);
  expect((await h.inject('GET', `/api/projects/${upper(p.id)}/tasks`)).json().pagination.total).toBe(lower);

  // bulk bodies: an id in another case is the same task (found, and a duplicate of itself)
  const bulk = await h.inject('POST', '/api/tasks/bulk/update', { taskIds: [mixed(taskId)], updates: { priority: 'low' } });
  expect(bulk.statusCode).toBe(200);
  expect(bulk.json().data).toMatchObject({ updated: 1, taskIds: [taskId], notFound: [] });
  const twice = await h.inject('POST', '/api/tasks/bulk/update', { taskIds: [taskId, upper(taskId)], updates: { priority: 'low' } });
  expect(twice.statusCode).toBe(400);

  // attempts and processes (rows written as a worker would)
  const attemptId = crypto.randomUUID();
  const processId = crypto.randomUUID();
  await insertAttempt(stack.db, { id: attemptId, taskId, llm: 'scripted', model: null, status: 'running', branchPrefix: 'armada', baseBranch: 'main', options: {}, description: '' });
  await insertProcess(stack.db, { id: processId, attemptId, taskId, llm: 'scripted', model: null, kind: 'initial', prompt: 'p' });
  await appendLogs(stack.db, processId, attemptId, [{ level: 'info', message: 'a line', timestamp: new Date().toISOString(), source: 'stdout' }]);
  const attempt = await h.inject('GET', `/api/attempts/${upper(attemptId)}`);
  expect(attempt.statusCode).toBe(200);
  expect(attempt.json().data.id).toBe(attemptId);
  expect((await h.inject('GET', `/api/attempts?taskId=${upper(taskId)}`)).json().pagination.total).toBe(1);
  expect((await h.inject('GET', `/api/tasks/${upper(taskId)}/attempts`)).json().data).toHaveLength(1);
  expect((await h.inject('GET', `/api/processes/${upper(processId)}`)).statusCode).toBe(200);
  expect((await h.inject('GET', `/api/processes?attemptId=${upper(attemptId)}`)).json().pagination.total).toBe(1);
  const logs = await h.inject('GET', `/api/processes/${mixed(processId)}/logs`);
  expect(logs.statusCode).toBe(200);
  expect(logs.body).toContain('a line');

  // an id that is no UUID is looked up as written, and found nowhere
  expect((await h.inject('GET', '/api/tasks/NOPE')).statusCode).toBe(404);
  expect((await h.inject('GET', `/api/tasks/${taskId}x`)).statusCode).toBe(404);
});

test('streams: topics and /ws subscriptions name a task by its id in any letter case', async () => {
  const p = await h.project();
  const taskId = await h.task(p.id, 'Watched in upper case');
  const events = await socket(`/ws/events?topics=task:${upper(taskId)}`);
  const tasks = await socket('/ws');
  tasks.ws.send(JSON.stringify({ type: 'subscribe', channel: 'tasks', taskId: upper(taskId) }));
  await eventually(async () => tasks.messages.some((m) => m.type === 'subscribed'));
  expect((await h.inject('PATCH', `/api/tasks/${taskId}`, { status: 'in_progress' })).statusCode).toBe(200);
  await eventually(async () => events.messages.some((m) => m.type === 'task.status_changed') && tasks.messages.some((m) => m.type === 'task.status_changed'), 10_000).catch(() => undefined);
  expect(events.messages.filter((m) => m.type === 'task.status_changed').map((m) => (m.data as { taskId: string }).taskId)).toEqual([taskId]);
  expect(tasks.messages.filter((m) => m.type === 'task.status_changed').map((m) => m.taskId)).toEqual([taskId]);
  events.ws.close();
  tasks.ws.close();
});
