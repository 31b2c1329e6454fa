/**
 * Process-log streams resumed with a cursor past the process's last stored line (`after` on the WebSockets,
 * `Last-Event-ID` on SSE): a cursor of another history of the database (restored from a backup) or a made-up one.
 * The stream starts at the real last line instead, says so first (`stream.ready` with `reset`; not on the raw socket,
 * whose every message is an output line), and every line written later comes, whatever its number.
 */
import http from 'node:http';
import WebSocket from 'ws';
import { recordProcessEnded } from '../../lib/attempts/projections';
import { insertAttempt } from '../../lib/db/attempts';
import { withTransaction } from '../../lib/db/pool';
import { appendLogs, insertProcess, type LogEntry } from '../../lib/db/processes';
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

const lines = (from: number, to: number): LogEntry[] =>
  Array.from({ length: to - from + 1 }, (_, i) => ({ level: 'info', message: `line ${from + i}`, timestamp: new Date().toISOString(), source: 'stdout' }));
const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

/** A running process of a running attempt, with `stored` log lines. */
async function runningProcess(name: string, stored: number): Promise<{ processId: string; attemptId: string }> {
  const p = await h.project();
  const taskId = await h.task(p.id, name);
  const attemptId = `att-${name}`;
  const processId = `proc-${name}`;
  await insertAttempt(stack.db, { id: attemptId, taskId, llm: 'scripted', model: null, status: 'running', branchPrefix: 'armada', baseBranch: 'main', options: {}, description: '' });
  await insertProcess(stack.db, { id: processId, attemptId, taskId, llm: 'scripted', model: null, kind: 'initial', prompt: 'p' });
  if (stored) await appendLogs(stack.db, processId, attemptId, lines(1, stored));
  return { processId, attemptId };
}

interface Socket {
  messages: unknown[];
  closed: Promise<number>;
}

function socket(path: string): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`${base.replace('http', 'ws')}${path}`);
    const messages: unknown[] = [];
    const closed = new Promise<number>((r) => ws.on('close', (code) => r(code)));
    ws.on('message', (d) => {
      const s = String(d);
      try {
        messages.push(JSON.parse(s));
      } catch {
        messages.push(s);
      }
    });
    ws.on('open', () => resolve({ messages, closed }));
    ws.on('error', reject);
  });
}

interface SseEvent {
  id?: string;
  event: string;
  data: Record<string, unknown>;
}

/** An SSE stream read as it comes (`events` grows) until the server ends it (`done`). */
function sse(path: string, headers: Record<string, string>): { events: SseEvent[]; done: Promise<void> } {
  const events: SseEvent[] = [];
  const done = new Promise<void>((resolve, reject) => {
    http
      .get(`${base}${path}`, { headers }, (res) => {
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
        res.on('end', () => resolve());
      })
      .on('error', reject);
  });
  return { events, done };
}

/** Waits up to 3 s for the streams' first messages, without failing: the assertions after say what was wrong. */
const opened = (first: () => boolean) => eventually(async () => first(), 3000, 20).catch(() => undefined);

const seqsOf = (messages: unknown[]) => (messages as { seq?: number; type?: string }[]).filter((m) => m.type === undefined).map((m) => m.seq);

test('a cursor past the last stored line: the stream starts at the real last line, says so first, and sends every later line', async () => {
  const { processId, attemptId } = await runningProcess('cursor-ahead', 3);
  const ahead = 10;
  const norm = await socket(`/ws/execution-processes/${processId}/logs/normalized?after=${ahead}`);
  const raw = await socket(`/ws/execution-processes/${processId}/logs/raw?after=${ahead}`);
  const events = sse(`/api/events/processes/${processId}/logs`, { 'last-event-id': String(ahead) });
  // a cursor the server knows (the last line itself) is no reset
  const known = await socket(`/ws/execution-processes/${processId}/logs/normalized?after=3`);
  const knownSse = sse(`/api/events/processes/${processId}/logs`, { 'last-event-id': '3' });
  // the streams have read the last line once their first message came (none comes on a stream that does not reset)
  await opened(() => norm.messages.length >= 1 && events.events.length >= 1);

  // lines 4…15 are written after the streams opened: 4…10 are numbered at or below the cursor
  await appendLogs(stack.db, processId, attemptId, lines(4, 9));
  await appendLogs(stack.db, processId, attemptId, lines(10, 15));
  // the last line comes on every stream (before, too): the stream ends only after it
  await eventually(async () => seqsOf(norm.messages).includes(15) && raw.messages.includes('line 15\n') && events.events.some((e) => e.id === '15'), 10_000);
  await withTransaction(stack.db, (c) => recordProcessEnded(c, processId, 'completed', 0, null));
  expect(await norm.closed).toBe(1000);
  expect(await raw.closed).toBe(1000);
  await events.done;

  expect(norm.messages[0]).toEqual({ type: 'stream.ready', seq: 3, data: { reset: true, requestedAfter: ahead } });
  expect(seqsOf(norm.messages.slice(1))).toEqual(range(4, 15));
  // the raw socket's messages are the output lines themselves: the lines come, the reset is not announced there
  expect(raw.messages).toEqual(range(4, 15).map((n) => `line ${n}\n`));
  expect(events.events[0]).toEqual({ id: '3', event: 'stream.ready', data: { processId, seq: 3, reset: true, requestedAfter: ahead } });
  expect(events.events.slice(1).map((e) => [e.event, e.id])).toEqual([...range(4, 15).map((n) => ['log', String(n)]), ['end', undefined]]);

  expect(await known.closed).toBe(1000);
  expect(known.messages.map((m) => (m as { seq: number }).seq)).toEqual(range(4, 15));
  await knownSse.done;
  expect(knownSse.events.map((e) => e.event)).toEqual([...range(4, 15).map(() => 'log'), 'end']);
});

test('a process with no line yet, and a Last-Event-ID past any seq a log can hold: reset to 0, nothing refused', async () => {
  const { processId, attemptId } = await runningProcess('cursor-ahead-empty', 0);
  const norm = await socket(`/ws/execution-processes/${processId}/logs/normalized?after=5`);
  const huge = '99999999999999';
  const events = sse(`/api/events/processes/${processId}/logs`, { 'last-event-id': huge });
  await opened(() => norm.messages.length >= 1 && events.events.length >= 1);
  await appendLogs(stack.db, processId, attemptId, lines(1, 2));
  await eventually(async () => seqsOf(norm.messages).includes(2) && events.events.some((e) => e.id === '2'), 5000).catch(() => undefined);
  await withTransaction(stack.db, (c) => recordProcessEnded(c, processId, 'completed', 0, null));
  expect(await norm.closed).toBe(1000);
  await events.done;
  expect(norm.messages).toEqual([{ type: 'stream.ready', seq: 0, data: { reset: true, requestedAfter: 5 } }, ...range(1, 2).map((seq) => expect.objectContaining({ seq, message: `line ${seq}` }))]);
  expect(events.events.map((e) => [e.event, e.id])).toEqual([['stream.ready', '0'], ['log', '1'], ['log', '2'], ['end', undefined]]);
  expect(events.events[0]?.data).toEqual({ processId, seq: 0, reset: true, requestedAfter: Number(huge) });
});

test('NDJSON (GET /api/processes/:id/logs?after=&follow=true) past the last stored line: every later line comes, X-Log-Reset names the real last line', async () => {
  const { processId, attemptId } = await runningProcess('cursor-ahead-ndjson', 3);
  const got: { headers: http.IncomingHttpHeaders; seqs: number[]; done: Promise<void> } = { headers: {}, seqs: [], done: Promise.resolve() };
  const headersIn = new Promise<void>((ready) => {
    got.done = new Promise<void>((resolve, reject) => {
      http
        .get(`${base}/api/processes/${processId}/logs?after=10&follow=true`, (res) => {
          got.headers = res.headers;
          ready();
          let buf = '';
          res.setEncoding('utf8');
          res.on('data', (d) => {
            buf += d;
            const parts = buf.split('\n');
            buf = parts.pop() ?? '';
            for (const l of parts) if (l.trim()) got.seqs.push((JSON.parse(l) as { seq: number }).seq);
          });
          res.on('end', () => resolve());
        })
        .on('error', reject);
    });
  });
  await headersIn;
  await appendLogs(stack.db, processId, attemptId, lines(4, 15));
  await eventually(async () => got.seqs.includes(15), 10_000).catch(() => undefined);
  await withTransaction(stack.db, (c) => recordProcessEnded(c, processId, 'completed', 0, null));
  await got.done;
  expect(got.headers['x-log-reset']).toBe('3');
  expect(got.seqs).toEqual(range(4, 15));
});
