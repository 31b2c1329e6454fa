/**
 * PostgreSQL restarted (a fast shutdown, then a start: every connection ends, new ones are refused meanwhile) under
 * `armada api --service task`, on a PostgreSQL of this file's own (test/support/ownPostgres.ts), while its long-lived
 * LISTEN connection serves a follower of /ws/events and the task read cache (lib/events/listener.ts,
 * lib/events/invalidatingCache.ts). Right after the start, before the API's listener is back (it looks again every
 * second), another process commits an event and changes a task by plain SQL: nobody hears their NOTIFYs. The
 * follower, whose socket stays open, still gets that event once (the listener catches up from the events table when
 * it is back) and then what the API writes; no read of the task after the change sees it as it was (the cache is
 * bypassed while the LISTEN connection is down and dropped when it is back), and the cache serves hits again.
 * Before this file, the same was shown with the LISTEN connection alone ended (pg_terminate_backend:
 * test/integration/events.test.ts, taskReadCache.test.ts), not across a restart of the server under a real process.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from 'pg';
import WebSocket from 'ws';
import { LISTENER_APPLICATION_NAME } from '../../lib/events/listener';
import { publishEvent, type StoredEvent } from '../../lib/events/publish';
import { spawnApi, type ApiProcess } from '../support/apiProcess';
import { eventually, makeGitRepo } from '../support/harness';
import { startOwnPostgres, type OwnPostgres } from '../support/ownPostgres';
import { timedRequest, type TimedAnswer as Answer } from '../support/timedRequest';

jest.setTimeout(300_000);

let home: string;
let pg: OwnPostgres;
let api: ApiProcess;
const sockets: WebSocket[] = [];

beforeAll(async () => {
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-pg-listen-'));
  pg = await startOwnPostgres(path.join(home, 'pg'));
  api = await spawnApi({ home, databaseUrl: pg.url, services: ['task'] });
}, 240_000);

afterAll(async () => {
  for (const ws of sockets) ws.terminate();
  await api?.stop();
  await pg?.close();
  if (home) fs.rmSync(home, { recursive: true, force: true });
});

const send = (method: 'GET' | 'POST', url: string, payload?: unknown, headers: Record<string, string> = {}): Promise<Answer> =>
  timedRequest(`${api.base('task')}${url}`, { method, payload, headers, timeoutMs: 60_000 });

interface Message {
  seq: number;
  type: string;
  topics: string[];
  data: Record<string, unknown>;
}

/** A follower of /ws/events on `topics`: what it got, and how its socket closed (undefined while open). */
async function follow(topics: string): Promise<{ events: Message[]; closed: () => number | undefined }> {
  const ws = new WebSocket(`${api.base('task').replace('http', 'ws')}/ws/events?topics=${topics}`);
  sockets.push(ws);
  const events: Message[] = [];
  let code: number | undefined;
  ws.on('message', (d) => {
    const m = JSON.parse(String(d)) as Message;
    if (m.type !== 'stream.ready') events.push(m);
  });
  ws.on('close', (c) => (code = c));
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  return { events, closed: () => code };
}

/** A task's title as the API reads it (throws when it does not serve it). */
async function titleOf(id: string): Promise<string> {
  const r = await send('GET', `/api/tasks/${id}`);
  if (r.status !== 200) throw new Error(`GET /api/tasks/${id}: ${r.status} ${JSON.stringify(r.body)}`);
  return (r.body.data as { title: string }).title;
}

test('PostgreSQL restarted under a live /ws/events follower and a warm read cache: the event committed before the listener is back comes once, no read is stale, the cache serves again', async () => {
  const project = await eventually(async () => {
    const a = await send('POST', '/api/projects', { name: 'Listen', repository: { url: makeGitRepo() } });
    return a.status === 201 && (a.body.data as { id: string });
  }, 60_000);
  const topic = `project:${project.id}`;
  const created = await send('POST', '/api/tasks', { projectId: project.id, title: 'before' });
  expect(created.status).toBe(201);
  const taskId = (created.body.data as { id: string }).id;
  const follower = await follow(topic);
  // the read cache is warm: the detail is served from memory
  await eventually(async () => {
    await send('GET', `/api/tasks/${taskId}`);
    return (await cacheOf(taskId)) === 'hit';
  }, 30_000, 200);
  const pid = api.child.pid;

  await pg.stop();
  await pg.start();
  // another process, at once: an event, and a change of the task nobody in the API hears (its listener looks again
  // only a second after each failed try)
  const other = new Client({ connectionString: pg.url });
  await other.connect();
  let missed: StoredEvent;
  try {
    await other.query('BEGIN');
    missed = await publishEvent(other, { type: 'test.while_away', topics: [topic], data: { n: 1 } });
    await other.query(`UPDATE tasks SET title = 'changed while away' WHERE id = $1`, [taskId]);
    // whether the API's listener was back before the commit (rarely: it would have heard it): what this run shows
    const listening = await other.query<{ n: string }>(`SELECT count(*) AS n FROM pg_stat_activity WHERE application_name = $1`, [LISTENER_APPLICATION_NAME]);
    await other.query('COMMIT');
    process.stdout.write(`listener connected at the commit: ${listening.rows[0]?.n}\n`);
  } finally {
    await other.end();
  }

  // no read after that change sees the task as it was, from the first one the API serves on
  const titles: string[] = [];
  await eventually(async () => {
    titles.push(await titleOf(taskId));
    return true;
  }, 60_000, 200);
  for (let i = 0; i < 5; i++) titles.push(await titleOf(taskId));
  expect(titles.filter((t) => t !== 'changed while away')).toEqual([]);

  // the follower, whose socket stayed open, gets the event committed while its listener was away, once; then what
  // the API writes now, once
  const after = await send('POST', '/api/tasks', { projectId: project.id, title: 'after' });
  expect(after.status).toBe(201);
  await eventually(async () => follower.events.some((e) => e.type === 'task.created' && e.data.title === 'after'), 60_000, 200);
  expect(follower.closed()).toBeUndefined();
  const seqs = follower.events.map((e) => e.seq);
  expect(seqs.filter((s, i) => seqs.indexOf(s) !== i)).toEqual([]); // none twice
  expect(follower.events.filter((e) => e.seq === missed.seq).map((e) => e.type)).toEqual(['test.while_away']);

  // the cache serves hits again, and what it serves is the change
  await eventually(async () => {
    await send('GET', `/api/tasks/${taskId}`);
    return (await cacheOf(taskId)) === 'hit';
  }, 60_000, 500);
  expect(await titleOf(taskId)).toBe('changed while away');
  expect(api.child.pid).toBe(pid);
  expect(api.child.exitCode).toBeNull();
});

/** Where the next read of the task's detail comes from (the `x-armada-cache` header). */
async function cacheOf(id: string): Promise<string | null> {
  const r = await fetch(`${api.base('task')}/api/tasks/${id}`, { signal: AbortSignal.timeout(60_000) });
  await r.text();
  return r.status === 200 ? r.headers.get('x-armada-cache') : null;
}
