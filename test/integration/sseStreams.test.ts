/**
 * Issue 14 item 6: both SSE routes keep the CORS and x-request-id headers, send keep-alive comments, and respect
 * backpressure (a client that stops reading does not make the server buffer the whole log); a HEAD is answered.
 */
import http from 'node:http';
import type { ServerResponse } from 'node:http';
import { insertAttempt } from '../../lib/db/attempts';
import { appendLogs, finishProcessRow, insertProcess, type LogEntry } from '../../lib/db/processes';
import { api } from '../support/attemptHelpers';
import { startTestStack, type TestStack } from '../support/harness';

const KEEPALIVE_MS = 200;
const BIG_ROWS = 6000;
const BIG_MESSAGE = 'x'.repeat(4000); // 6,000 × ~4 KB ≈ 24 MB of events: more than any socket buffer holds

let stack: TestStack;
let base: string;
let attemptId: string;
let finishedProcess: string;
let runningProcess: string;
let bigProcess: string;
/** The raw responses of SSE requests, by request id, to read what the server holds in its write buffer. */
const responses = new Map<string, ServerResponse>();

beforeAll(async () => {
  stack = await startTestStack({
    services: ['task'],
    env: { ARMADA_SSE_KEEPALIVE_MS: String(KEEPALIVE_MS) },
    beforeReady: (_name, app) => {
      app.addHook('onRequest', async (request, reply) => {
        if (request.url.startsWith('/api/events/')) responses.set(request.id, reply.raw);
      });
    },
  });
  base = await stack.app('task').listen({ port: 0, host: '127.0.0.1' });
  const h = api(stack);
  const project = await h.project();
  const task = await h.task(project.id, 'sse');
  attemptId = 'att-sse-1';
  await insertAttempt(stack.db, { id: attemptId, taskId: task, llm: 'scripted', model: null, status: 'running', branchPrefix: 'armada', baseBranch: 'main', options: {}, description: '' });
  const proc = (id: string) => insertProcess(stack.db, { id, attemptId, taskId: task, llm: 'scripted', model: null, kind: 'initial', prompt: 'p' });
  const entry = (message: string): LogEntry => ({ level: 'info', message, timestamp: new Date().toISOString(), source: 'stdout' });
  finishedProcess = (await proc('proc-sse-done')).id;
  await appendLogs(stack.db, finishedProcess, attemptId, [entry('one'), entry('two')]);
  await finishProcessRow(stack.db, finishedProcess, 'completed', { exitCode: 0, error: null });
  runningProcess = (await proc('proc-sse-running')).id;
  bigProcess = (await proc('proc-sse-big')).id;
  for (let i = 0; i < BIG_ROWS; i += 1000) await appendLogs(stack.db, bigProcess, attemptId, Array.from({ length: 1000 }, () => entry(BIG_MESSAGE)));
  await finishProcessRow(stack.db, bigProcess, 'completed', { exitCode: 0, error: null });
}, 120_000);

afterAll(async () => {
  await stack?.close();
});

/** Opens an SSE request; resolves with the response once headers are in. */
const open = (path: string, headers: Record<string, string>) =>
  new Promise<{ req: http.ClientRequest; res: http.IncomingMessage }>((resolve, reject) => {
    const req = http.get(`${base}${path}`, { headers }, (res) => resolve({ req, res }));
    req.on('error', reject);
  });

const text = (res: http.IncomingMessage, untilMs?: number) =>
  new Promise<string>((resolve) => {
    let buf = '';
    res.setEncoding('utf8');
    res.on('data', (d) => (buf += d));
    res.on('end', () => resolve(buf));
    if (untilMs) setTimeout(() => resolve(buf), untilMs);
  });

describe('SSE', () => {
  test.each([
    ['process logs', () => `/api/events/processes/${finishedProcess}/logs`],
    ['attempt diff', () => `/api/events/task-attempts/${attemptId}/diff`],
  ])('%s keeps the CORS and x-request-id headers', async (_name, path) => {
    const { req, res } = await open(path(), { origin: 'http://localhost:3000', 'x-request-id': 'sse-headers-1' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('text/event-stream; charset=utf-8');
    expect(res.headers['access-control-allow-origin']).toBe('http://localhost:3000');
    expect(res.headers['access-control-expose-headers']).toMatch(/X-Request-Id/i);
    expect(res.headers['x-request-id']).toBe('sse-headers-1');
    req.destroy();
  });

  // Node sends a HEAD answer's headers only when it ends (its body writes are dropped): an SSE stream that stayed open
  // answered nothing at all, for as long as the process ran
  test.each([
    ['process logs (running process)', () => `/api/events/processes/${runningProcess}/logs`],
    ['attempt diff (running attempt)', () => `/api/events/task-attempts/${attemptId}/diff`],
  ])('HEAD on %s answers the GET\'s headers and ends', async (_name, path) => {
    const answer = await new Promise<{ status?: number; type?: string; body: string } | 'no answer'>((resolve) => {
      const req = http.request(`${base}${path()}`, { method: 'HEAD' }, (res) => {
        let body = '';
        res.on('data', (d) => (body += d));
        res.on('end', () => resolve({ status: res.statusCode, type: res.headers['content-type'], body }));
      });
      req.on('error', () => resolve('no answer'));
      req.setTimeout(20_000, () => req.destroy());
      req.end();
    });
    expect(answer).toEqual({ status: 200, type: 'text/event-stream; charset=utf-8', body: '' });
  }, 30_000);

  test('a disallowed origin gets no access-control-allow-origin, as on every other route', async () => {
    const { req, res } = await open(`/api/events/processes/${finishedProcess}/logs`, { origin: 'https://evil.example' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['access-control-allow-origin']).toBeUndefined();
    req.destroy();
  });

  test('an idle stream gets a keep-alive comment every interval', async () => {
    const { req, res } = await open(`/api/events/processes/${runningProcess}/logs`, {});
    const body = await text(res, KEEPALIVE_MS * 5);
    req.destroy();
    expect(body.startsWith('retry: 2000\n\n')).toBe(true);
    expect(body.match(/^: keep-alive$/gm)?.length ?? 0).toBeGreaterThanOrEqual(2);
    expect(body).not.toContain('event:'); // nothing else was sent: the process has no lines
  });

  test('a client that stops reading: the server waits for drain instead of buffering the log, then delivers all of it', async () => {
    const requestId = 'sse-slow-reader';
    const { req, res } = await open(`/api/events/processes/${bigProcess}/logs`, { 'x-request-id': requestId });
    res.pause();
    const server = responses.get(requestId);
    if (!server) throw new Error('no server response captured');
    // while the client reads nothing, sample what the server holds in its own write buffer
    let maxBuffered = 0;
    for (let i = 0; i < 20; i++) {
      await new Promise((r) => setTimeout(r, 100));
      maxBuffered = Math.max(maxBuffered, server.writableLength);
    }
    expect(server.writableEnded).toBe(false); // 24 MB cannot have gone out to a client that reads nothing
    expect(server.writableNeedDrain).toBe(true); // it is waiting for 'drain'
    // at most one event beyond the stream's high-water mark, against ~24 MB without backpressure
    expect(maxBuffered).toBeLessThan(server.writableHighWaterMark + 64 * 1024);
    // reading again delivers every line and the end event
    const body = text(res);
    res.resume();
    const all = await body;
    req.destroy();
    expect(all.match(/^event: log$/gm)?.length).toBe(BIG_ROWS);
    expect(all).toContain('event: end\ndata: {"processId":"proc-sse-big","status":"completed"}');
  }, 60_000);
});
