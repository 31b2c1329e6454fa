/**
 * Issue 17 item 2: push-based live logs. Writers batch lines into multi-row inserts that NOTIFY their high-water
 * mark; one feed per API process fans them out. Every follower gets every line once, in order: with concurrent
 * writers, on two API replicas, when resuming (Last-Event-ID, `after`) and across an API restart; idle followers
 * cost the database nothing. Item 3's row: live diffs are read once per worktree change, shared by all viewers.
 */
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import WebSocket from 'ws';
import { buildService } from '../../api/services';
import { queueLiveState, settleLiveState } from '../../lib/attempts/liveState';
import { createLogSink } from '../../lib/attempts/logSink';
import { streamLogRows } from '../../lib/attempts/logStream';
import { recordAttemptFinished, recordProcessEnded } from '../../lib/attempts/projections';
import { getAttempt, insertAttempt } from '../../lib/db/attempts';
import { withTransaction } from '../../lib/db/pool';
import { appendLogs, appendLogsOfProcesses, insertProcess, readLogs, type LogEntry } from '../../lib/db/processes';
import { createEventListener } from '../../lib/events/listener';
import { createLogFeed, SAFETY_MS } from '../../lib/events/logFeed';
import { createMetrics } from '../../lib/metrics';
import { agentConfig, api } from '../support/attemptHelpers';
import { eventually, logger, startTestStack, type TestStack } from '../support/harness';

let stack: TestStack;
let h: ReturnType<typeof api>;

beforeAll(async () => {
  stack = await startTestStack({ services: ['task'], worker: true, file: agentConfig() });
  h = api(stack);
}, 120_000);
afterAll(async () => {
  await stack?.close();
});

/** Another task-service app on the same database and Temporal: a replica, or the restarted API. */
const replica = () => buildService('task', { db: stack.db, config: stack.config, keys: stack.keys, temporal: stack.temporal, logger, metrics: createMetrics() });

interface Followed {
  messages: { seq: number; message: string }[];
  closed: Promise<number>;
  ws: WebSocket;
}

/** A WebSocket follower of a process's normalized log; retried while the process row does not exist yet. */
async function followSocket(base: string, processId: string, after?: number): Promise<Followed> {
  for (let i = 0; ; i++) {
    const f = await new Promise<Followed>((resolve, reject) => {
      const ws = new WebSocket(`${base.replace('http', 'ws')}/ws/execution-processes/${processId}/logs/normalized${after !== undefined ? `?after=${after}` : ''}`);
      const messages: Followed['messages'] = [];
      const closed = new Promise<number>((r) => ws.on('close', (code) => r(code)));
      ws.on('message', (d) => {
        const m = JSON.parse(String(d)) as { seq?: number; message?: string };
        if (typeof m.seq === 'number') messages.push({ seq: m.seq, message: m.message as string });
      });
      ws.on('open', () => resolve({ ws, messages, closed }));
      ws.on('error', reject);
    });
    if (i > 50 || (await Promise.race([f.closed, new Promise((r) => setTimeout(() => r('open'), 200))])) !== 4404) return f;
  }
}

/** Reads an SSE log stream; `stopAfter` disconnects after that many log events. */
function readSse(base: string, path: string, headers: Record<string, string> = {}, stopAfter?: number): Promise<{ id: number; message: string }[]> {
  return new Promise((resolve, reject) => {
    const got: { id: number; message: string }[] = [];
    const req = http.get(`${base}${path}`, { headers }, (res) => {
      let buf = '';
      res.setEncoding('utf8');
      res.on('data', (d) => {
        buf += d;
        let i = buf.indexOf('\n\n');
        while (i >= 0) {
          const block = buf.slice(0, i);
          buf = buf.slice(i + 2);
          i = buf.indexOf('\n\n');
          const f = Object.fromEntries(block.split('\n').map((l) => [l.slice(0, l.indexOf(':')), l.slice(l.indexOf(':') + 2)]));
          if (f.event !== 'log') continue;
          got.push({ id: Number(f.id), message: (JSON.parse(f.data as string) as { message: string }).message });
          if (stopAfter !== undefined && got.length >= stopAfter) {
            req.destroy();
            return resolve(got);
          }
        }
      });
      res.on('end', () => resolve(got));
    });
    req.on('error', (err) => (stopAfter !== undefined && got.length >= stopAfter ? resolve(got) : reject(err)));
  });
}

/** The NDJSON body of a follow=true request, to its end. */
const readNdjson = (base: string, path: string) =>
  new Promise<{ processId: string; seq: number; message: string }[]>((resolve, reject) => {
    http
      .get(`${base}${path}`, (res) => {
        let buf = '';
        res.on('data', (d) => (buf += d));
        res.on('end', () => resolve(buf.split('\n').filter(Boolean).map((l) => JSON.parse(l))));
      })
      .on('error', reject);
  });

const seqs = (n: number) => Array.from({ length: n }, (_, i) => i + 1);

describe('live logs', () => {
  test('a log followed over WebSocket across an API restart: every line once, in order', async () => {
    const first = stack.app('task');
    const base = await first.listen({ port: 0, host: '127.0.0.1' });
    const port = Number(new URL(base).port);
    const p = await h.project();
    const taskId = await h.task(p.id, 'CHATTY:600');
    const { attemptId, processId } = await h.start(taskId);

    const before = await followSocket(base, processId);
    await eventually(async () => before.messages.length >= 100, 30_000, 20);
    // the API goes away mid-stream, while the agent keeps writing
    await first.close();
    await before.closed;
    const restarted: FastifyInstance = await replica();
    stack.apps.task = restarted;
    await restarted.listen({ port, host: '127.0.0.1' });
    const lastSeq = before.messages.at(-1)?.seq as number;
    const after = await followSocket(base, processId, lastSeq);
    expect(await after.closed).toBe(1000); // closed by the server: the process finished
    await h.until(attemptId, ['completed']);

    const all = [...before.messages, ...after.messages];
    const { rows } = await stack.db.query<{ seq: number; message: string }>('SELECT seq, message FROM process_logs WHERE process_id = $1 ORDER BY seq', [processId]);
    expect(rows.length).toBeGreaterThan(600);
    expect(all.map((m) => m.seq)).toEqual(rows.map((r) => r.seq)); // every stored line once, in order
    expect(all.map((m) => m.message).filter((m) => m.startsWith('line '))).toEqual(seqs(600).map((i) => `line ${i}`));
    expect(before.messages.length).toBeLessThan(600); // the restart really fell in the middle
  }, 120_000);

  test('concurrent writers, two API replicas, SSE Last-Event-ID, WS and NDJSON `after`: each follower gets every line once, in order', async () => {
    const replicaA = stack.app('task');
    const baseA = replicaA.server.listening ? `http://127.0.0.1:${(replicaA.server.address() as { port: number }).port}` : await replicaA.listen({ port: 0, host: '127.0.0.1' });
    const replicaB = await replica();
    const baseB = await replicaB.listen({ port: 0, host: '127.0.0.1' });
    try {
      const p = await h.project();
      const taskId = await h.task(p.id, 'concurrent writers');
      const attemptId = 'att-live-logs-1';
      await insertAttempt(stack.db, { id: attemptId, taskId, llm: 'scripted', model: null, status: 'running', branchPrefix: 'armada', baseBranch: 'main', options: {}, description: '' });
      const WRITERS = 4;
      const LINES = 1500;
      const ids = Array.from({ length: WRITERS }, (_, i) => `proc-live-${i}`);
      // the attempt's NDJSON follower starts before any process exists: it finds them as they appear
      const attemptFollow = readNdjson(baseB, `/api/attempts/${attemptId}/logs?follow=true`);
      for (const id of ids) await insertProcess(stack.db, { id, attemptId, taskId, llm: 'scripted', model: null, kind: 'initial', prompt: 'p' });
      const sockets = await Promise.all(ids.flatMap((id) => [followSocket(baseA, id), followSocket(baseB, id)]));
      const sseFull = readSse(baseA, `/api/events/processes/${ids[0]}/logs`);
      const ssePart = readSse(baseB, `/api/events/processes/${ids[1]}/logs`, {}, 300);

      // four writers at once, each through its own sink (the shared writer: multi-row inserts, 25 ms or 500 lines)
      await Promise.all(
        ids.map(async (id) => {
          const queue: LogEntry[] = [];
          const sink = createLogSink({ db: stack.db, processId: id, attemptId, queue, logger });
          for (let i = 1; i <= LINES; i++) {
            queue.push({ level: 'info', message: `${id} line ${i}`, timestamp: new Date().toISOString(), source: 'stdout' });
            sink.poke();
            if (i % 50 === 0) await new Promise((r) => setTimeout(r, 5));
          }
          await sink.flush();
          sink.close();
        }),
      );
      const partial = await ssePart;
      expect(partial.map((e) => e.id)).toEqual(seqs(300));
      for (const id of ids) await withTransaction(stack.db, (c) => recordProcessEnded(c, id, 'completed', 0, null));
      await recordAttemptFinished(stack.db, attemptId, 'completed', null, '');

      for (const [i, s] of sockets.entries()) {
        const id = ids[Math.floor(i / 2)] as string;
        expect(await s.closed).toBe(1000);
        expect(s.messages.map((m) => m.seq)).toEqual(seqs(LINES));
        expect(s.messages.map((m) => m.message)).toEqual(seqs(LINES).map((n) => `${id} line ${n}`));
      }
      expect((await sseFull).map((e) => e.id)).toEqual(seqs(LINES));
      // resumes: SSE with Last-Event-ID on the other replica, WS and NDJSON with `after`
      const resumed = await readSse(baseA, `/api/events/processes/${ids[1]}/logs`, { 'last-event-id': '300' });
      expect(resumed.map((e) => e.id)).toEqual(seqs(LINES).slice(300));
      const ws = await followSocket(baseB, ids[2] as string, 1234);
      await ws.closed;
      expect(ws.messages.map((m) => m.seq)).toEqual(seqs(LINES).slice(1234));
      const nd = await readNdjson(baseA, `/api/processes/${ids[3]}/logs?follow=true&after=1499`);
      expect(nd.map((l) => l.seq)).toEqual([1500]);
      const byProcess = new Map<string, number[]>();
      for (const l of await attemptFollow) byProcess.set(l.processId, [...(byProcess.get(l.processId) ?? []), l.seq]);
      expect([...byProcess.keys()].sort()).toEqual(ids);
      for (const id of ids) expect(byProcess.get(id)).toEqual(seqs(LINES));
    } finally {
      await replicaB.close();
    }
  }, 120_000);

  test('one writer for all sinks: the lines of many processes go in shared inserts, in order, and a process whose row is gone does not hold back the others', async () => {
    const p = await h.project();
    const taskId = await h.task(p.id, 'shared log writer');
    const attemptId = 'att-live-logs-writer';
    await insertAttempt(stack.db, { id: attemptId, taskId, llm: 'scripted', model: null, status: 'running', branchPrefix: 'armada', baseBranch: 'main', options: {}, description: '' });
    const ids = Array.from({ length: 8 }, (_, i) => `proc-writer-${i}`);
    for (const id of ids) await insertProcess(stack.db, { id, attemptId, taskId, llm: 'scripted', model: null, kind: 'initial', prompt: 'p' });
    const gone = 'proc-writer-gone'; // no process row: its inserts fail on the foreign key
    const warnings: string[] = [];
    const warnLogger = { ...logger, warn: (_o: unknown, msg: string) => void warnings.push(msg) } as unknown as typeof logger;
    const LINES = 400;
    const sinks = [...ids, gone].map((id) => {
      const queue: LogEntry[] = [];
      return { id, queue, sink: createLogSink({ db: stack.db, processId: id, attemptId, queue, logger: warnLogger }) };
    });
    // every writer adds a line every few ms, as chatty agents do
    for (let i = 1; i <= LINES; i++) {
      for (const w of sinks) {
        w.queue.push({ level: 'info', message: `${w.id} line ${i}`, timestamp: new Date().toISOString(), source: 'stdout' });
        w.sink.poke();
      }
      if (i % 20 === 0) await new Promise((r) => setTimeout(r, 5));
    }
    const t0 = Date.now();
    const done = sinks.map((w) => w.sink.flush().then(() => Date.now() - t0));
    const healthyMs = Math.max(...(await Promise.all(done.slice(0, ids.length))));
    const goneMs = (await done.at(-1)) as number;
    for (const w of sinks) w.sink.close();
    // the failing process is retried, 500 ms apart, before its lines are dropped; the others did not wait for it
    expect(goneMs).toBeGreaterThanOrEqual(500);
    expect(healthyMs).toBeLessThan(goneMs);
    for (const id of ids) {
      const { rows } = await stack.db.query<{ seq: number; message: string }>('SELECT seq, message FROM process_logs WHERE process_id = $1 ORDER BY seq', [id]);
      expect(rows.map((r) => r.seq)).toEqual(seqs(LINES));
      expect(rows.map((r) => r.message)).toEqual(seqs(LINES).map((n) => `${id} line ${n}`));
    }
    expect((await stack.db.query('SELECT 1 FROM process_logs WHERE process_id = $1', [gone])).rowCount).toBe(0);
    expect(warnings).toContain('log lines dropped after failed inserts');
    // with no failing process, 8 writers × 400 lines are a handful of shared inserts, not one per process per batch
    const healthy = ids.map((id) => {
      const queue: LogEntry[] = [];
      return { id, queue, sink: createLogSink({ db: stack.db, processId: id, attemptId, queue, logger }) };
    });
    for (let i = 1; i <= 100; i++) {
      for (const w of healthy) {
        w.queue.push({ level: 'info', message: `${w.id} more ${i}`, timestamp: new Date().toISOString(), source: 'stdout' });
        w.sink.poke();
      }
    }
    await Promise.all(healthy.map((w) => w.sink.flush()));
    // the transactions that wrote these 800 rows (their xmin): fewer than one per process. (pg_stat_database's commit
    // count, used before, also counted other connections' commits whose statistics were flushed late: flaky.)
    const writers = await stack.db.query<{ n: number }>("SELECT count(DISTINCT xmin::text)::int AS n FROM process_logs WHERE process_id = ANY($1) AND message LIKE '% more %'", [ids]);
    expect(writers.rows[0]?.n).toBeGreaterThan(0);
    expect(writers.rows[0]?.n).toBeLessThan(ids.length);
    for (const id of ids) {
      const { rows } = await stack.db.query<{ seq: number }>('SELECT seq FROM process_logs WHERE process_id = $1 ORDER BY seq', [id]);
      expect(rows.map((r) => r.seq)).toEqual(seqs(LINES + 100));
    }
  }, 60_000);

  test('the column-array insert stores every field as given: raw apart from the message, metadata, quotes, braces, NULL-like text, unicode', async () => {
    const p = await h.project();
    const taskId = await h.task(p.id, 'log encoding');
    const attemptId = 'att-live-logs-encoding';
    await insertAttempt(stack.db, { id: attemptId, taskId, llm: 'scripted', model: null, status: 'running', branchPrefix: 'armada', baseBranch: 'main', options: {}, description: '' });
    const ids = ['proc-enc-a', 'proc-enc-b'];
    for (const id of ids) await insertProcess(stack.db, { id, attemptId, taskId, llm: 'scripted', model: null, kind: 'initial', prompt: 'p' });
    const ts = '2026-11-24T04:20:00.123Z';
    const tricky: LogEntry[] = [
      { level: 'info', message: 'plain', timestamp: ts, source: 'stdout' },
      { level: 'warn', message: 'NULL', raw: 'NULL', timestamp: ts, source: 'stderr' },
      { level: 'error', message: 'parsed', raw: '{"type":"raw json","x":[1,2]}', metadata: { tool: 'bash', n: 3, nested: { ok: true } }, timestamp: ts, source: 'stdout' },
      { level: 'debug', message: 'empty raw', raw: '', metadata: {}, timestamp: ts, source: 'armada' },
      { level: 'info', message: 'quotes " and \\ backslash, {braces}, commas, \t tab and ✓ 😀', timestamp: ts, source: 'setup' },
      { level: 'info', message: '', timestamp: ts, source: 'stdout' },
    ];
    // two processes in one statement, then one more line through the single-process insert
    await appendLogsOfProcesses(stack.db, [
      { processId: 'proc-enc-a', attemptId, entries: tricky },
      { processId: 'proc-enc-b', attemptId, entries: tricky.slice(0, 2) },
    ]);
    expect(await appendLogs(stack.db, 'proc-enc-b', attemptId, [tricky[2] as LogEntry])).toBe(3);
    const a = await readLogs(stack.db, { processIds: ['proc-enc-a'] });
    expect(a.map((r) => [r.seq, r.level, r.message, r.raw, r.metadata, r.source, r.ts.toISOString(), r.attempt_id])).toEqual(
      tricky.map((e, i) => [i + 1, e.level, e.message, e.raw ?? e.message, e.metadata ?? {}, e.source, ts, attemptId]),
    );
    const b = await readLogs(stack.db, { processIds: ['proc-enc-b'] });
    expect(b.map((r) => [r.seq, r.message, r.raw, r.metadata])).toEqual([
      [1, 'plain', 'plain', {}],
      [2, 'NULL', 'NULL', {}],
      [3, 'parsed', '{"type":"raw json","x":[1,2]}', { tool: 'bash', n: 3, nested: { ok: true } }],
    ]);
  });

  test("running agents' live state: one update for all of a worker's processes; a run's end settles what is queued for it", async () => {
    const p = await h.project();
    const taskId = await h.task(p.id, 'live state');
    const attemptId = 'att-live-state';
    await insertAttempt(stack.db, { id: attemptId, taskId, llm: 'scripted', model: null, status: 'running', branchPrefix: 'armada', baseBranch: 'main', options: {}, description: '' });
    const ids = Array.from({ length: 6 }, (_, i) => `proc-live-state-${i}`);
    for (const id of ids) await insertProcess(stack.db, { id, attemptId, taskId, llm: 'scripted', model: null, kind: 'initial', prompt: 'p' });
    // the even ones also have their process_progress event due
    await Promise.all(
      ids.flatMap((id, i) => [
        queueLiveState(stack.db, id, { progress: { stage: 'running', current: `first ${i}` } }),
        queueLiveState(stack.db, id, { progress: { current: `second ${i}` }, tokens: { input: 10 + i, output: 20 + i, cost: 0.5 } }, { event: i % 2 === 0 }),
      ]),
    );
    // the transactions that last wrote the six rows (their xmin): one update for all, not one per process
    const writers = await stack.db.query<{ n: number }>('SELECT count(DISTINCT xmin::text)::int AS n FROM processes WHERE id = ANY($1)', [ids]);
    expect(writers.rows[0]?.n).toBeLessThan(ids.length);
    // the events: one per process that asked, carrying its row as updated, written by the update's own transaction
    const { rows: events } = await stack.db.query<{ topics: string[]; data: Record<string, unknown>; same: boolean }>(
      `SELECT e.topics, e.data, e.xmin::text = p.xmin::text AS same FROM events e JOIN processes p ON p.id = e.data->>'processId'
        WHERE e.type = 'process_progress' AND p.id = ANY($1) ORDER BY p.id`,
      [ids],
    );
    expect(events.map((e) => e.data.processId)).toEqual(ids.filter((_, i) => i % 2 === 0));
    for (const e of events) {
      const i = ids.indexOf(e.data.processId as string);
      expect(e.topics).toEqual([`process:${ids[i]}`, `attempt:${attemptId}`, `task:${taskId}`, 'processes']);
      expect(e.data).toEqual({ processId: ids[i], attemptId, taskId, llm: 'scripted', status: 'running', exitCode: null, progress: expect.objectContaining({ stage: 'running', current: `second ${i}` }) });
      expect(e.same).toBe(true);
    }
    const { rows } = await stack.db.query<{ id: string; progress: { stage: string; current: string }; input_tokens: string; output_tokens: string; estimated_cost: number }>(
      'SELECT id, progress, input_tokens, output_tokens, estimated_cost FROM processes WHERE id = ANY($1) ORDER BY id',
      [ids],
    );
    expect(rows.map((r) => [r.progress.stage, r.progress.current, Number(r.input_tokens), Number(r.output_tokens), r.estimated_cost])).toEqual(
      ids.map((_, i) => ['running', `second ${i}`, 10 + i, 20 + i, 0.5]),
    );
    // settled: what was queued comes back to the caller and is not written later over the run's last values
    const late = queueLiveState(stack.db, ids[0] as string, { progress: { current: 'late' } });
    expect(await settleLiveState(stack.db, ids[0] as string)).toEqual({ progress: { current: 'late' }, tokens: undefined });
    await late;
    await new Promise((r) => setTimeout(r, 300));
    const { rows: after } = await stack.db.query<{ progress: { current: string } }>('SELECT progress FROM processes WHERE id = $1', [ids[0]]);
    expect(after[0]?.progress.current).toBe('second 0');
  });

  test('a follow ends after its attempt does even when the event saying so never arrives: the safety re-check wakes it', async () => {
    const p = await h.project();
    const taskId = await h.task(p.id, 'missed end');
    const attemptId = 'att-live-logs-missed-end';
    const processId = 'proc-live-logs-missed-end';
    await insertAttempt(stack.db, { id: attemptId, taskId, llm: 'scripted', model: null, status: 'running', branchPrefix: 'armada', baseBranch: 'main', options: {}, description: '' });
    await insertProcess(stack.db, { id: processId, attemptId, taskId, llm: 'scripted', model: null, kind: 'initial', prompt: 'p' });
    // a listener that hears no events (as if the attempt's end event were lost), and a fresh feed: its first safety
    // re-check is the first time it sees the attempt's status, already final by then
    const deaf = await createEventListener(stack.dbUrl, stack.db, logger, { events: false });
    const feed = createLogFeed(stack.db, deaf, logger);
    try {
      const t0 = Date.now();
      const following = (async () => {
        for await (const _ of streamLogRows(stack.db, {
          processes: async () => [processId],
          finished: async () => (await getAttempt(stack.db, attemptId))?.status === 'completed',
          follow: true,
          feed,
          topics: [`attempt:${attemptId}`],
        }));
        return Date.now() - t0;
      })();
      await new Promise((r) => setTimeout(r, 300));
      await stack.db.query(`UPDATE attempts SET status = 'completed', completed_at = now() WHERE id = $1`, [attemptId]);
      let timer: NodeJS.Timeout | undefined;
      const endedAfter = await Promise.race([following, new Promise<number>((r) => (timer = setTimeout(() => r(-1), 3 * SAFETY_MS)))]);
      clearTimeout(timer);
      expect(endedAfter).toBeGreaterThan(0);
      expect(endedAfter).toBeLessThan(SAFETY_MS + 2000);
    } finally {
      feed.close();
      await deaf.close();
    }
  }, 30_000);

  test('idle followers do not query the logs: 20 sockets on a quiet process cost no process_logs reads', async () => {
    const base = stack.app('task').server.listening
      ? `http://127.0.0.1:${(stack.app('task').server.address() as { port: number }).port}`
      : await stack.app('task').listen({ port: 0, host: '127.0.0.1' });
    const p = await h.project();
    const taskId = await h.task(p.id, 'quiet');
    const attemptId = 'att-live-logs-quiet';
    await insertAttempt(stack.db, { id: attemptId, taskId, llm: 'scripted', model: null, status: 'running', branchPrefix: 'armada', baseBranch: 'main', options: {}, description: '' });
    await insertProcess(stack.db, { id: 'proc-quiet', attemptId, taskId, llm: 'scripted', model: null, kind: 'initial', prompt: 'p' });
    const sockets = await Promise.all(Array.from({ length: 20 }, () => followSocket(base, 'proc-quiet')));
    await new Promise((r) => setTimeout(r, 500)); // each has done its first read
    const original = stack.db.query.bind(stack.db);
    let reads = 0;
    (stack.db as { query: unknown }).query = (...args: unknown[]) => {
      if (typeof args[0] === 'string' && args[0].includes('process_logs')) reads++;
      return (original as (...a: unknown[]) => unknown)(...args);
    };
    try {
      await new Promise((r) => setTimeout(r, 2000));
    } finally {
      (stack.db as { query: unknown }).query = original;
    }
    // polling every 250 ms, 20 followers made ~160 reads here; the feed makes at most its shared safety check
    expect(reads).toBeLessThanOrEqual(1);
    for (const s of sockets) s.ws.close();
  }, 60_000);

  test('live diff: viewers of one attempt share one reader, which reads the diff only when the worktree changes', async () => {
    const app = stack.app('task');
    const base = app.server.listening ? `http://127.0.0.1:${(app.server.address() as { port: number }).port}` : await app.listen({ port: 0, host: '127.0.0.1' });
    const p = await h.project();
    const taskId = await h.task(p.id, 'SLEEP while its diff is watched');
    const { attemptId } = await h.start(taskId);
    const a = await eventually(async () => {
      const row = await getAttempt(stack.db, attemptId);
      return row?.status === 'running' && row.worktree_path && fs.existsSync(row.worktree_path) ? row : undefined;
    }, 30_000);
    const file = path.join(a.worktree_path as string, 'viewed.txt');
    fs.writeFileSync(file, 'one\n');
    const metric = async (kind: string) => Number(new RegExp(`armada_live_diff_reads_total\\{kind="${kind}"\\} (\\d+)`).exec((await h.inject('GET', '/metrics')).body)?.[1] ?? 0);
    const viewers = [0, 1, 2].map(() => collectSse(base, `/api/events/task-attempts/${attemptId}/diff`));
    await eventually(async () => viewers.every((v) => v.events.length >= 1), 30_000);
    await new Promise((r) => setTimeout(r, 2500)); // two or more looks at an unchanged worktree
    expect(await metric('diff')).toBe(1); // one read for three viewers, none while nothing changed
    expect(await metric('fingerprint')).toBeGreaterThanOrEqual(2);
    for (const v of viewers) {
      expect(v.events).toHaveLength(1);
      expect(v.events[0]).toMatchObject({ event: 'diff', data: { attemptId, summary: { filesChanged: 1, additions: 1 } } });
    }
    fs.appendFileSync(file, 'two\n');
    await eventually(async () => viewers.every((v) => v.events.length >= 2), 30_000);
    expect(await metric('diff')).toBe(2);
    for (const v of viewers) expect(v.events[1]).toMatchObject({ event: 'diff', data: { summary: { additions: 2 } } });
    expect((await h.inject('POST', `/api/attempts/${attemptId}/cancel`)).statusCode).toBe(200);
    for (const v of viewers) expect((await v.done).at(-1)).toMatchObject({ event: 'end' });
  }, 90_000);
});

/** An SSE stream read as it arrives: the events so far, and all of them once it ends. */
function collectSse(base: string, path: string) {
  const events: { id?: string; event: string; data: unknown }[] = [];
  const done = new Promise<typeof events>((resolve, reject) => {
    http
      .get(`${base}${path}`, (res) => {
        let buf = '';
        res.setEncoding('utf8');
        res.on('data', (d) => {
          buf += d;
          let i = buf.indexOf('\n\n');
          while (i >= 0) {
            const block = buf.slice(0, i);
            buf = buf.slice(i + 2);
            i = buf.indexOf('\n\n');
            if (!block.includes('event:')) continue;
            const f = Object.fromEntries(block.split('\n').map((l) => [l.slice(0, l.indexOf(':')), l.slice(l.indexOf(':') + 2)]));
            events.push({ id: f.id, event: f.event as string, data: JSON.parse(f.data as string) });
          }
        });
        res.on('end', () => resolve(events));
      })
      .on('error', reject);
  });
  return { events, done };
}
