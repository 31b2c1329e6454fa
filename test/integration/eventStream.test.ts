/** /ws/events: domain events live, narrowed by topic, and replayed after a seq so a reconnecting client has no gap. */
import type net from 'node:net';
import WebSocket from 'ws';
import { WS_DROP_BYTES } from '../../api/http/wsTextFrames';
import { publishEvents } from '../../lib/events/publish';
import { eventually, makeGitRepo, startTestStack, type TestStack } from '../support/harness';

const KEY = 'event-stream-key-0123456789';
let stack: TestStack;
let base: string;

beforeAll(async () => {
  stack = await startTestStack({ env: { ARMADA_TASK_API_KEY: KEY } });
  base = (await stack.app('task').listen({ port: 0, host: '127.0.0.1' })).replace('http', 'ws');
}, 120_000);
afterAll(async () => {
  await stack?.close();
});

interface Event {
  seq: number;
  type: string;
  topics: string[];
  data: Record<string, unknown>;
}

async function call<T>(method: string, url: string, payload?: unknown): Promise<T> {
  const res = await stack.app('task').inject({ method: method as 'POST', url, payload: payload as object, headers: { authorization: `Bearer ${KEY}` } });
  if (res.statusCode >= 300) throw new Error(`${method} ${url}: ${res.statusCode} ${res.body}`);
  return res.json().data as T;
}

const readySeqs: number[] = [];

function open(query: string): Promise<{ ws: WebSocket; events: Event[]; ready: Event[]; messages: Event[] }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`${base}/ws/events?${query}&access_token=${KEY}`);
    const events: Event[] = [];
    const ready: Event[] = [];
    const messages: Event[] = []; // both, in the order they came
    ws.on('message', (d) => {
      const e = JSON.parse(String(d)) as Event;
      messages.push(e);
      if (e.type === 'stream.ready') {
        readySeqs.push(e.seq);
        ready.push(e);
      } else events.push(e);
    });
    ws.on('open', () => resolve({ ws, events, ready, messages }));
    ws.on('error', reject);
  });
}

test("a project's task events arrive live; after a reconnect with after=<seq> the missed ones come first, none twice", async () => {
  const project = await call<{ id: string }>('POST', '/api/projects', { name: 'Events', repository: { url: makeGitRepo() } });
  const other = await call<{ id: string }>('POST', '/api/projects', { name: 'Other events', repository: { url: makeGitRepo() } });
  const first = await open(`topics=project:${project.id}`);
  const t1 = await call<{ id: string }>('POST', '/api/tasks', { projectId: project.id, title: 'one' });
  await call('POST', '/api/tasks', { projectId: other.id, title: 'elsewhere' });
  await call('PATCH', `/api/tasks/${t1.id}`, { status: 'in_progress' });
  await eventually(async () => first.events.length >= 3);
  expect(first.events.map((e) => [e.type, e.data.taskId])).toEqual([
    ['task.created', t1.id],
    ['task.status_changed', t1.id],
    ['task.updated', t1.id],
  ]);
  expect(first.events[1]?.data).toMatchObject({ status: 'in_progress', previousStatus: 'pending', projectId: project.id });
  expect(first.events[2]?.data).toMatchObject({ fields: ['status'], projectId: project.id });
  first.ws.close();

  const lastSeq = first.events[2]?.seq as number;
  const t2 = await call<{ id: string }>('POST', '/api/tasks', { projectId: project.id, title: 'two, while away' });
  const resumed = await open(`topics=project:${project.id}&after=${lastSeq}`);
  const t3 = await call<{ id: string }>('POST', '/api/tasks', { projectId: project.id, title: 'three, live' });
  await eventually(async () => resumed.events.length >= 2);
  await new Promise((r) => setTimeout(r, 300)); // nothing more, in particular no duplicate
  expect(resumed.events.map((e) => [e.type, e.data.taskId])).toEqual([
    ['task.created', t2.id],
    ['task.created', t3.id],
  ]);
  expect(resumed.events[0]?.seq).toBeGreaterThan(lastSeq);
  resumed.ws.close();
});

test('a resume right after a commit: the replayed event is not sent again when its notification is heard late (20 rounds)', async () => {
  const project = await call<{ id: string }>('POST', '/api/projects', { name: 'Late notify', repository: { url: makeGitRepo() } });
  readySeqs.length = 0;
  const first = await open(`topics=project:${project.id}`);
  await eventually(async () => readySeqs.length === 1);
  let after = readySeqs[0] as number;
  first.ws.close();
  for (let round = 0; round < 20; round++) {
    // committed before the stream opens; its NOTIFY may reach the listener after the replay has sent it
    const t = await call<{ id: string }>('POST', '/api/tasks', { projectId: project.id, title: `round ${round}` });
    const s = await open(`topics=project:${project.id}&after=${after}`);
    await eventually(async () => s.events.some((e) => e.data.taskId === t.id));
    await new Promise((r) => setTimeout(r, 100));
    expect(s.events.filter((e) => e.data.taskId === t.id).map((e) => e.type)).toEqual(['task.created']);
    after = Math.max(...s.events.map((e) => e.seq));
    s.ws.close();
  }
});

test('edits and deletes made anywhere are events too: task.updated names the fields, task.deleted (single and bulk)', async () => {
  const project = await call<{ id: string }>('POST', '/api/projects', { name: 'Edits', repository: { url: makeGitRepo() } });
  const a = await call<{ id: string }>('POST', '/api/tasks', { projectId: project.id, title: 'a' });
  const b = await call<{ id: string }>('POST', '/api/tasks', { projectId: project.id, title: 'b' });
  const c = await call<{ id: string }>('POST', '/api/tasks', { projectId: project.id, title: 'c' });
  const s = await open(`topics=project:${project.id}`);
  await call('PATCH', `/api/tasks/${a.id}`, { title: 'a, renamed', labels: ['x'] });
  await call('POST', '/api/tasks/bulk/update', { taskIds: [b.id], updates: { priority: 'high' } });
  await call('DELETE', `/api/tasks/${a.id}`);
  await call('POST', '/api/tasks/bulk/delete', { taskIds: [b.id, c.id, 'no-such-task'] });
  // a creation committed just before the stream opened may still be heard after it subscribed (NOTIFY is
  // asynchronous) and then comes live, above stream.ready's seq: allowed, and not what this test is about
  const created = () => s.events.filter((e) => e.type === 'task.created');
  const edits = () => s.events.filter((e) => e.type !== 'task.created');
  await eventually(async () => edits().length >= 5);
  await new Promise((r) => setTimeout(r, 300));
  expect(edits().slice(0, 3).map((e) => [e.type, e.data.taskId, e.data.fields])).toEqual([
    ['task.updated', a.id, ['title', 'labels']],
    ['task.updated', b.id, ['priority']],
    ['task.deleted', a.id, undefined],
  ]);
  // one bulk delete: one event per deleted task, none for the unknown id
  expect(edits().slice(3).map((e) => [e.type, e.data.taskId]).sort()).toEqual([['task.deleted', b.id], ['task.deleted', c.id]].sort());
  expect(edits()).toHaveLength(5);
  expect(edits()[2]?.data).toEqual({ taskId: a.id, projectId: project.id });
  for (const e of created()) expect([a.id, b.id, c.id]).toContain(e.data.taskId);
  s.ws.close();
});

test('stream.ready gives a resume point even when no event of the topics came', async () => {
  const project = await call<{ id: string }>('POST', '/api/projects', { name: 'Quiet', repository: { url: makeGitRepo() } });
  readySeqs.length = 0;
  const quiet = await open(`topics=project:${project.id}`);
  await eventually(async () => readySeqs.length === 1);
  quiet.ws.close();
  const t = await call<{ id: string }>('POST', '/api/tasks', { projectId: project.id, title: 'while nobody listened' });
  const resumed = await open(`topics=project:${project.id}&after=${readySeqs[0]}`);
  await eventually(async () => resumed.events.length >= 1 && readySeqs.length === 2);
  expect(resumed.events.map((e) => [e.type, e.data.taskId])).toEqual([['task.created', t.id]]);
  expect(readySeqs[1]).toBeGreaterThanOrEqual(resumed.events[0]?.seq as number);
  resumed.ws.close();
});

test('after= past the newest stored event: stream.ready gives the real newest seq and says so; a resume from it misses nothing', async () => {
  const project = await call<{ id: string }>('POST', '/api/projects', { name: 'Cursor ahead', repository: { url: makeGitRepo() } });
  const topics = `topics=project:${project.id}`;
  const newest = async () => Number((await stack.db.query<{ s: string }>('SELECT max(seq) AS s FROM events')).rows[0]?.s ?? 0);
  // a cursor from another history of the database (restored from a backup, recreated) or made up
  const ahead = (await newest()) + 1000;
  const first = await open(`${topics}&after=${ahead}`);
  await eventually(async () => first.ready.length === 1);
  const ready = first.ready[0] as Event;
  expect(ready.seq).toBe(await newest()); // the real high-water mark, not the cursor
  expect(ready.data).toEqual({ reset: true, requestedAfter: ahead });
  // live events numbered below the cursor arrive
  const live = await call<{ id: string }>('POST', '/api/tasks', { projectId: project.id, title: 'live, numbered below the cursor' });
  await eventually(async () => first.events.some((e) => e.data.taskId === live.id));
  expect(first.events.map((e) => e.seq).every((seq) => seq > ready.seq && seq < ahead)).toBe(true);
  const seen = Math.max(ready.seq, ...first.events.map((e) => e.seq));
  first.ws.close();

  // away: a task is created; the client resumes from what it was told and gets it
  const away = await call<{ id: string }>('POST', '/api/tasks', { projectId: project.id, title: 'while away' });
  const resumed = await open(`${topics}&after=${seen}`);
  await eventually(async () => resumed.ready.length === 1);
  await eventually(async () => resumed.events.some((e) => e.data.taskId === away.id), 5000);
  expect(resumed.events.map((e) => [e.type, e.data.taskId])).toEqual([['task.created', away.id]]);
  expect(resumed.ready[0]?.data).toEqual({}); // a cursor this server knows: no reset
  resumed.ws.close();
});

test('after= past the newest stored event, with events committing while the stream opens: stream.ready (reset) comes first, then every later event once, in order', async () => {
  const topic = `reset-race:${Math.random().toString(36).slice(2)}`;
  const publish = async (n: number) => (await publishEvents(stack.db, [{ type: 'test.reset', topics: [topic], data: { n } }]))[0]?.seq as number;
  const ahead = Number((await stack.db.query<{ s: string }>('SELECT max(seq) AS s FROM events')).rows[0]?.s ?? 0) + 1000;
  // The stream reads the newest seq, then the events after it, then sends what it heard meanwhile. Event 1 commits
  // right after the newest seq was read, event 2 right after the first read of the events after it: both come after
  // the reset point, in the window where the stream has not said yet that it reset.
  const original = stack.db.query.bind(stack.db) as (...a: unknown[]) => Promise<{ rows: { seq?: string }[] }>;
  let resetPoint: number | undefined;
  const injected: number[] = [];
  (stack.db as { query: unknown }).query = async (...args: unknown[]) => {
    const result = await original(...args);
    const sql = typeof args[0] === 'string' ? args[0] : '';
    const values = (args[1] ?? []) as unknown[];
    if (resetPoint === undefined && sql.startsWith('SELECT max(seq) AS seq FROM events')) {
      resetPoint = Number(result.rows[0]?.seq ?? 0);
      injected.push(await publish(1));
    } else if (injected.length === 1 && sql.includes('FROM events WHERE seq >') && JSON.stringify(values[2]) === JSON.stringify([topic])) {
      injected.push(await publish(2));
    }
    return result;
  };
  const s = await (async () => {
    try {
      const opened = await open(`topics=${topic}&after=${ahead}`);
      await eventually(async () => opened.ready.length === 1 && injected.length === 2);
      return opened;
    } finally {
      (stack.db as { query: unknown }).query = original;
    }
  })();
  await eventually(async () => s.events.length >= 2, 5000).catch(() => undefined);
  const live = await publish(3);
  await eventually(async () => s.events.some((e) => e.seq === live), 5000).catch(() => undefined);
  await new Promise((r) => setTimeout(r, 300)); // nothing more, in particular no duplicate
  expect(s.messages[0]).toMatchObject({ type: 'stream.ready', seq: resetPoint, data: { reset: true, requestedAfter: ahead } });
  expect(s.messages.slice(1).map((e) => [e.type, e.data.n, e.seq])).toEqual([
    ['test.reset', 1, injected[0]],
    ['test.reset', 2, injected[1]],
    ['test.reset', 3, live],
  ]);
  expect(injected[0]).toBeGreaterThan(resetPoint as number);
  s.ws.close();
});

test('the stream needs the key (query-string key accepted only on stream routes) and refuses bad parameters', async () => {
  const refused = await new Promise<number>((resolve) => {
    const ws = new WebSocket(`${base}/ws/events`);
    ws.on('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
    ws.on('error', () => undefined);
  });
  expect(refused).toBe(401);
  const bad = await stack.app('task').inject({ method: 'GET', url: '/ws/events?after=-1', headers: { authorization: `Bearer ${KEY}` } });
  expect(bad.statusCode).toBe(400);
});

test('a client that stops reading is dropped once 8 MiB wait for it, never holding more; it resumes with after=<seq> and misses nothing', async () => {
  const topic = `flood:${Math.random().toString(36).slice(2)}`;
  const sockets = new Set<net.Socket>();
  const onConnection = (s: net.Socket) => sockets.add(s);
  stack.app('task').server.on('connection', onConnection);
  const slow = await open(`topics=${topic}`);
  stack.app('task').server.off('connection', onConnection);
  await eventually(async () => readySeqs.length > 0 || undefined);
  (slow.ws as unknown as { _socket: net.Socket })._socket.pause();
  const closed = new Promise<number>((r) => slow.ws.on('close', (code) => r(code)));
  let most = 0;
  const sample = setInterval(() => {
    for (const s of sockets) most = Math.max(most, s.writableLength);
  }, 2);
  // 6,000 events of ~2 KB each (12 MB): past what the socket's kernel buffers and the 8 MiB hold
  const blob = 'x'.repeat(2000);
  let last = 0;
  for (let b = 0; b < 12; b++) {
    const stored = await publishEvents(stack.db, Array.from({ length: 500 }, (_v, i) => ({ type: 'test.flood', topics: [topic], data: { n: b * 500 + i, blob } })));
    last = stored[stored.length - 1]?.seq as number;
  }
  await eventually(async () => sockets.size > 0 && [...sockets].every((s) => s.destroyed) || undefined, 20_000);
  clearInterval(sample);
  expect(most).toBeLessThanOrEqual(WS_DROP_BYTES + 64 * 1024); // the limit and the one event that crossed it
  (slow.ws as unknown as { _socket: net.Socket })._socket.resume();
  expect(await closed).toBe(1006); // its 1008 waited behind 8 MiB it did not read within DROP_GRACE_MS: cut
  const got = slow.events.map((e) => e.data.n as number);
  expect(got).toEqual(got.map((_v, i) => i)); // what it got came in order, from the first
  expect(got.length).toBeLessThan(6000);
  // it resumes after the last event it got, and gets the rest: every event once
  const resumed = await open(`topics=${topic}&after=${slow.events[slow.events.length - 1]?.seq ?? 0}`);
  await eventually(async () => resumed.events.some((e) => e.seq === last) || undefined, 30_000);
  expect([...got, ...resumed.events.map((e) => e.data.n as number)]).toEqual(Array.from({ length: 6000 }, (_v, i) => i));
  resumed.ws.close();
}, 120_000);
