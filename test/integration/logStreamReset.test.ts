/**
 * Process-log streams resumed with a cursor past the process's last stored line (`after` on the WebSockets,
 * `Last-Event-ID` on SSE): a cursor of another history of the database (restored from a backup) or a made-up one.
 * The stream starts at the real last line instead, says so first (`stream.ready` with `reset`; on the raw socket, whose
 * every line ends with a newline, only to a client that asks for notices, and then without one; on the sockets also
 * `X-Log-Reset` in the handshake), and every line written later comes, whatever its number.
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

/** A socket read as text, each message as it came, with the headers of its handshake's answer. */
function textSocket(path: string): Promise<{ messages: string[]; headers: http.IncomingHttpHeaders; closed: Promise<number> }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`${base.replace('http', 'ws')}${path}`);
    const messages: string[] = [];
    let headers: http.IncomingHttpHeaders = {};
    const closed = new Promise<number>((r) => ws.on('close', (code) => r(code)));
    ws.on('upgrade', (res) => (headers = res.headers));
    ws.on('message', (d) => messages.push(String(d)));
    ws.on('open', () => resolve({ messages, headers, closed }));
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
  // a raw client that did not ask for notices gets the output lines only (the reset is in its handshake: next test)
  expect(raw.messages).toEqual(range(4, 15).map((n) => `line ${n}\n`));
  expect(events.events[0]).toEqual({ id: '3', event: 'stream.ready', data: { processId, seq: 3, reset: true, requestedAfter: ahead } });
  expect(events.events.slice(1).map((e) => [e.event, e.id])).toEqual([...range(4, 15).map((n) => ['log', String(n)]), ['end', undefined]]);

  expect(await known.closed).toBe(1000);
  expect(known.messages.map((m) => (m as { seq: number }).seq)).toEqual(range(4, 15));
  await knownSse.done;
  expect(knownSse.events.map((e) => e.event)).toEqual([...range(4, 15).map(() => 'log'), 'end']);
});

test('a process with no line yet, and a Last-Event-ID at the largest seq a log can hold: reset to 0, nothing refused', async () => {
  const { processId, attemptId } = await runningProcess('cursor-ahead-empty', 0);
  const norm = await socket(`/ws/execution-processes/${processId}/logs/normalized?after=5`);
  const huge = '2147483647';
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

test('the raw socket past the last stored line: a client that asks for notices gets the reset first, as the one message without a newline; every log socket\'s handshake says X-Log-Reset', async () => {
  const { processId, attemptId } = await runningProcess('cursor-ahead-raw', 3);
  const ahead = 10;
  const noticed = await textSocket(`/ws/execution-processes/${processId}/logs/raw?after=${ahead}&notices=true`);
  // a client that only prints lines, as before
  const printer = await textSocket(`/ws/execution-processes/${processId}/logs/raw?after=${ahead}`);
  const norm = await textSocket(`/ws/execution-processes/${processId}/logs/normalized?after=${ahead}`);
  // cursors the server knows: no reset, nothing said
  const known = await textSocket(`/ws/execution-processes/${processId}/logs/raw?after=3&notices=true`);
  const fromStart = await textSocket(`/ws/execution-processes/${processId}/logs/raw?notices=true`);
  await opened(() => noticed.messages.length >= 1 && norm.messages.length >= 1);

  // an agent line that reads like the notice is still a line: it ends with a newline, as every line does
  const lookalike = JSON.stringify({ type: 'stream.ready', seq: 99, data: { reset: true, requestedAfter: 100 } });
  await appendLogs(stack.db, processId, attemptId, [...lines(4, 5), { level: 'info', message: lookalike, timestamp: new Date().toISOString(), source: 'stdout' }, ...lines(7, 8)]);
  const out = ['line 4\n', 'line 5\n', `${lookalike}\n`, 'line 7\n', 'line 8\n'];
  await eventually(async () => [noticed, printer, known, fromStart].every((s) => s.messages.includes('line 8\n')), 10_000).catch(() => undefined);
  await withTransaction(stack.db, (c) => recordProcessEnded(c, processId, 'completed', 0, null));
  for (const s of [noticed, printer, norm, known, fromStart]) expect(await s.closed).toBe(1000);

  const notice = { type: 'stream.ready', seq: 3, data: { reset: true, requestedAfter: ahead } };
  expect(noticed.messages[0]).toBe(JSON.stringify(notice));
  expect(noticed.messages.slice(1)).toEqual(out);
  expect(noticed.messages.filter((m) => !m.endsWith('\n'))).toEqual([JSON.stringify(notice)]);
  expect(printer.messages).toEqual(out);
  expect(known.messages).toEqual(out);
  expect(fromStart.messages).toEqual(['line 1\n', 'line 2\n', 'line 3\n', ...out]);
  expect(JSON.parse(norm.messages[0] as string)).toEqual(notice);
  // the handshake's answer says it to every client that reads it, before any message
  for (const s of [noticed, printer, norm]) expect(s.headers['x-log-reset']).toBe('3');
  for (const s of [known, fromStart]) expect(s.headers['x-log-reset']).toBeUndefined();
});

/** The status and body of a request that ends (an error), or the status alone of a stream that opened (closed at once). */
function answer(path: string, headers: Record<string, string>): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.get(`${base}${path}`, { headers }, (res) => {
      if (res.statusCode === 200) {
        req.destroy();
        return resolve({ status: 200, body: '' });
      }
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', (err) => ((err as NodeJS.ErrnoException).code === 'ECONNRESET' ? undefined : reject(err)));
  });
}

test('a Last-Event-ID that is no seq (hex, exponent, fraction, sign, blanks inside, words, beyond the largest seq) is a 400 naming it, as the same value in `after` is; the diff stream takes only a diff id', async () => {
  const { processId, attemptId } = await runningProcess('bad-last-event-id', 3);
  const logs = `/api/events/processes/${processId}/logs`;
  for (const bad of ['0x2', '1e0', '2.5', '+2', '-1', 'abc', '2 3', '', '2147483648', '99999999999999999999']) {
    const r = await answer(logs, { 'last-event-id': bad });
    expect([bad, r.status]).toEqual([bad, 400]);
    expect(JSON.parse(r.body)).toMatchObject({ success: false, error: { code: 'VALIDATION_ERROR', details: { 'last-event-id': expect.any(String) } } });
    // the same value as the NDJSON route's cursor: the same answer
    expect([bad, (await h.inject('GET', `/api/processes/${processId}/logs?after=${encodeURIComponent(bad)}`)).statusCode]).toEqual([bad, 400]);
  }
  for (const good of ['0', '2', '02', '2147483647']) expect([good, (await answer(logs, { 'last-event-id': good })).status]).toEqual([good, 200]);
  // a resume after 2 sends line 3 only: not after 0x2 read as 2, nor from the start
  const resumed = sse(logs, { 'last-event-id': '2' });
  await opened(() => resumed.events.length >= 1);
  await withTransaction(stack.db, (c) => recordProcessEnded(c, processId, 'completed', 0, null));
  await resumed.done;
  expect(resumed.events.map((e) => [e.event, e.id])).toEqual([['log', '3'], ['end', undefined]]);

  const diff = `/api/events/task-attempts/${attemptId}/diff`;
  for (const bad of ['xyz', '0123456789ABCDEF', '0123456789abcde', '', 'unavailable']) {
    const r = await answer(diff, { 'last-event-id': bad });
    expect([bad, r.status]).toEqual([bad, 400]);
    expect(JSON.parse(r.body)).toMatchObject({ success: false, error: { code: 'VALIDATION_ERROR', details: { 'last-event-id': expect.any(String) } } });
  }
  expect((await answer(diff, { 'last-event-id': '0123456789abcdef' })).status).toBe(200);
});

test('log sockets of a process that does not exist: an error message and 4404, with or without notices', async () => {
  for (const path of ['raw?after=5&notices=true', 'raw', 'normalized?after=5']) {
    const s = await textSocket(`/ws/execution-processes/no-such-process/logs/${path}`);
    expect(await s.closed).toBe(4404);
    expect(s.messages.map((m) => JSON.parse(m))).toEqual([{ type: 'error', message: 'Process no-such-process not found' }]);
    expect(s.headers['x-log-reset']).toBeUndefined();
  }
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
