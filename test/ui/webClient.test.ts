/** The board's API client and stream helpers that need no browser: error shapes, SSE parsing, backoff, stream resets. */
import { api, ApiError, buildUrl, errorFromBody, SERVICE_KEY_REFUSED, svc } from '../../web/src/api/client';
import { onUnauthorized, setApiKey } from '../../web/src/api/auth';
import { errorNote, notLoadedReason } from '../../web/src/api/errorNote';
import { backoffDelay, createSseParser, eventStreamResume, openWebSocketStream } from '../../web/src/api/streams';
import { createStreamCursor, resetSeqOf } from '../../web/src/api/streamCursor';
import { describeStream, lostStreams, markLost, markOpen } from '../../web/src/api/connection';
import { isUnavailable, retryWhileUnavailable, UNAVAILABLE_RETRY_MS, unavailableNote } from '../../web/src/api/unavailable';
import { WEBHOOK_EVENTS as BOARD_WEBHOOK_EVENTS } from '../../web/src/api/settings';
import { WEBHOOK_EVENTS } from '../../lib/db/webhooks';
import { formatCost } from '../../web/src/components/money';
import { formatDuration, parseSchedulerDuration } from '../../web/src/components/duration';
import { humanDuration } from '../../lib/scheduler/settings';

test('money reads the same on every screen: two decimals, thousands separated, "< $0.01" for a tiny nonzero amount', () => {
  expect([0, 0.0001, 0.0049, 0.005, 0.1234, 1, 1234.5, 2_000_000].map(formatCost)).toEqual([
    '$0.00',
    '< $0.01',
    '< $0.01',
    '$0.01',
    '$0.12',
    '$1.00',
    '$1,234.50',
    '$2,000,000.00',
  ]);
});

test('durations read the same on every screen; the scheduler\'s "83ms" and "1m 05s" are written as the task screen writes them', () => {
  expect([null, 0, 0.02, 0.083, 12.44, 59.97, 65, 3725].map(formatDuration)).toEqual(['—', '0.0 s', '< 0.1 s', '0.1 s', '12.4 s', '1 min 0 s', '1 min 5 s', '1 h 2 min']);
  // every form the scheduler API writes (lib/scheduler/settings.ts) is read back
  for (const ms of [0, 83, 999, 1200, 59_940, 65_000, 7_440_000]) {
    const seconds = parseSchedulerDuration(humanDuration(ms));
    expect(seconds).not.toBeNull();
    expect(Math.abs((seconds ?? 0) - ms / 1000)).toBeLessThanOrEqual(0.5);
  }
  expect(parseSchedulerDuration('soon')).toBeNull();
});

test("the board offers exactly the service's webhook events (web/src/api/settings.ts keeps a copy)", () => {
  expect([...BOARD_WEBHOOK_EVENTS]).toEqual([...WEBHOOK_EVENTS]);
});

test("errors of both shapes carry the server's message", () => {
  const envelope = errorFromBody(409, { success: false, error: { code: 'PROJECT_EXISTS', message: 'A project named "x" already exists', details: { name: 'x' } } });
  expect(envelope).toBeInstanceOf(ApiError);
  expect([envelope.message, envelope.status, envelope.code, envelope.details]).toEqual(['A project named "x" already exists', 409, 'PROJECT_EXISTS', { name: 'x' }]);
  const detail = errorFromBody(404, { detail: 'Source not found' });
  expect([detail.message, detail.status]).toEqual(['Source not found', 404]);
  expect(errorFromBody(422, { detail: [{ loc: ['body', 'cron'], msg: 'invalid' }] }).message).toContain('invalid');
  expect(errorFromBody(502, '<html>bad gateway</html>').message).toBe('Request failed with HTTP 502');
});

test('a service down (502, 503, 504, no answer) is named, and its reads are sent again every 5 s; other errors are not', () => {
  const down = errorFromBody(503, { detail: 'The database (PostgreSQL) is not answering; try again' }, 'scheduler');
  expect(isUnavailable(down)).toBe(true);
  expect(unavailableNote(down)).toBe('The scheduler service is unavailable (HTTP 503). This screen tries again every 5 seconds by itself.');
  // an action (a save, a delete) is not sent again by itself, and its note says so
  expect(unavailableNote(down, false)).toBe('The scheduler service is unavailable (HTTP 503). Nothing is sent again by itself: try again once it is back.');
  const unreachable = new ApiError('Cannot reach the Armada server', 0, 'NETWORK_ERROR');
  expect(unavailableNote(unreachable)).toBe('The Armada server did not answer. This screen tries again every 5 seconds by itself.');
  for (const status of [502, 504]) expect(isUnavailable(errorFromBody(status, null))).toBe(true);
  for (const status of [400, 404, 409, 500]) expect(isUnavailable(errorFromBody(status, null))).toBe(false);
  expect(isUnavailable(new Error('plain'))).toBe(false);
  expect(retryWhileUnavailable({ state: { status: 'error', error: down } })).toBe(UNAVAILABLE_RETRY_MS);
  expect(retryWhileUnavailable({ state: { status: 'error', error: errorFromBody(404, null) } })).toBe(false);
  expect(retryWhileUnavailable({ state: { status: 'success', error: null } })).toBe(false);
});

test("a proxied service's own 401 refused the task service's key: no key prompt, and the note names the setting to fix", async () => {
  const realFetch = globalThis.fetch;
  let prompts = 0;
  const stop = onUnauthorized(() => prompts++);
  // what each one answers a refused key: the scheduler (api/http/apiKeyAuth.ts), the task service (bearerAuth.ts, also
  // on /svc/…, checked before the forwarding), a code-hosting route (docs/codehost.md)
  const answer = (body: unknown) => {
    globalThis.fetch = async () => new Response(JSON.stringify(body), { status: 401, headers: { 'content-type': 'application/json' } });
  };
  try {
    answer({ detail: 'Invalid API key' });
    const refused = await svc('scheduler', '/sources').catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(ApiError);
    expect([(refused as ApiError).code, (refused as ApiError).status, (refused as ApiError).service, (refused as ApiError).message]).toEqual([SERVICE_KEY_REFUSED, 401, 'scheduler', 'Invalid API key']);
    expect(prompts).toBe(0);
    expect(errorNote(refused)).toBe(
      "The scheduler service refused the key the task service sends it (HTTP 401): the key of this tab is fine. On the task service's host, set ARMADA_SCHEDULER_API_KEY (or ARMADA_API_KEY, which the three services share) to the key that service expects, and restart Armada.",
    );
    expect(notLoadedReason(refused)).toBe("the scheduler service refused the task service's key");

    answer({ success: false, error: { code: 'UNAUTHORIZED', message: 'Authentication required' } });
    const ours = (await svc('agents', '/agents').catch((e: unknown) => e)) as ApiError;
    expect([ours.code, ours.status]).toEqual(['UNAUTHORIZED', 401]);
    expect(prompts).toBe(1);
    expect(errorNote(ours)).toBeNull();

    answer({ success: false, error: 'codehost_auth_required', message: 'Sign in to the code host' });
    const codehost = (await api('/auth/codehost/status').catch((e: unknown) => e)) as ApiError;
    expect(codehost.code).toBe('codehost_auth_required');
    expect(prompts).toBe(1);
  } finally {
    globalThis.fetch = realFetch;
    stop();
    // the refused key is forgotten as a new key does it (the streams below would wait for one): no sessionStorage here
    const g = globalThis as unknown as { sessionStorage?: unknown };
    g.sessionStorage = { removeItem: () => undefined };
    setApiKey(null);
    delete g.sessionStorage;
  }
});

test('what an error adds to its message: the service down, refusing (403) or failing (500); nothing for a plain 404', () => {
  expect(errorNote(errorFromBody(403, { detail: 'Forbidden' }, 'traces'))).toBe(
    'The message trace service refused this request to the key this tab sends (HTTP 403): use a key that is allowed to do it (Settings, API key).',
  );
  const failed = errorFromBody(500, { detail: 'Internal server error' }, 'scheduler');
  expect(errorNote(failed)).toBe('The scheduler service failed on this request (HTTP 500): its log on the server says why.');
  expect(notLoadedReason(failed)).toBe('the scheduler service answered HTTP 500');
  const down = errorFromBody(503, { detail: 'down' }, 'scheduler');
  expect(errorNote(down)).toBe('The scheduler service is unavailable (HTTP 503). This screen tries again every 5 seconds by itself.');
  expect(notLoadedReason(down)).toBe('the scheduler service is unavailable');
  expect(errorNote(errorFromBody(404, { detail: 'Source not found' }, 'scheduler'))).toBeNull();
  expect(errorNote(new Error('plain'))).toBeNull();
});

test('URLs: task service under /api, the other services through the /svc proxy; empty query values are left out', () => {
  expect(buildUrl('task', '/projects/p1/tasks', { page: 2, limit: 100, search: '', q: undefined })).toBe('/api/projects/p1/tasks?page=2&limit=100');
  expect(buildUrl('scheduler', '/schedules')).toBe('/svc/scheduler/api/v1/schedules');
  expect(buildUrl('traces', '/traces', { status: 'sent' })).toBe('/svc/traces/api/v1/traces?status=sent');
});

test('the SSE parser splits events across chunks, keeps the last id, ignores comments', () => {
  const events: [string, string, string | undefined][] = [];
  const feed = createSseParser((event, data, id) => events.push([event, data, id]));
  feed('retry: 2000\n\n: keep-alive\n\nid: 7\nevent: log\ndata: {"a"');
  feed(':1}\n\ndata: line one\ndata: line two\r\n\r\nid: 8\nevent: end\ndata: {}\n\n');
  expect(events).toEqual([
    ['log', '{"a":1}', '7'],
    ['message', 'line one\nline two', '7'],
    ['end', '{}', '8'],
  ]);
});

test('reconnect backoff doubles from 250 ms up to 10 s, with jitter', () => {
  for (let i = 0; i < 50; i++) {
    expect(backoffDelay(0)).toBeGreaterThanOrEqual(200);
    expect(backoffDelay(0)).toBeLessThanOrEqual(300);
    expect(backoffDelay(3)).toBeGreaterThanOrEqual(1600);
    expect(backoffDelay(3)).toBeLessThanOrEqual(2400);
    expect(backoffDelay(20)).toBeLessThanOrEqual(12_000);
    expect(backoffDelay(20)).toBeGreaterThanOrEqual(8000);
  }
});

test('a stream cursor: de-duplication by seq, and a reset that forgets what was seen', () => {
  const seen = createStreamCursor('seen');
  expect([5, 7, 6, 7].map((n) => seen.accept(n))).toEqual([true, true, true, false]);
  expect(seen.last).toBe(7);
  seen.reset(3);
  expect(seen.last).toBe(3);
  expect([5, 6, 4].map((n) => seen.accept(n))).toEqual([true, true, true]); // numbers seen before the reset are new
  expect(seen.last).toBe(6);
  const monotonic = createStreamCursor('monotonic');
  expect([1, 2, 2, 1, 3].map((n) => monotonic.accept(n))).toEqual([true, true, false, false, true]);
  monotonic.reset(0);
  expect(monotonic.accept(1)).toBe(true);
  expect(resetSeqOf({ type: 'stream.ready', seq: 4, data: { reset: true, requestedAfter: 9 } })).toBe(4);
  for (const m of [{ type: 'stream.ready', seq: 4, data: {} }, { type: 'task.created', seq: 4, data: { reset: true } }, { seq: 4, message: 'x' }, null, 'line']) {
    expect(resetSeqOf(m)).toBeUndefined();
  }
});

/** A stand-in for the browser's WebSocket: the test plays the server. */
class FakeSocket {
  static all: FakeSocket[] = [];
  onopen: (() => void) | null = null;
  onmessage: ((ev: { data: string }) => void) | null = null;
  onclose: ((ev: { code: number }) => void) | null = null;
  closedByClient = false;
  constructor(readonly url: string) {
    FakeSocket.all.push(this);
    queueMicrotask(() => this.onopen?.());
  }
  send(): void {}
  close(): void {
    this.closedByClient = true;
    queueMicrotask(() => this.onclose?.({ code: 1005 }));
  }
  serverSends(msg: unknown): void {
    this.onmessage?.({ data: JSON.stringify(msg) });
  }
  drop(): void {
    this.onclose?.({ code: 1006 });
  }
}

describe('openWebSocketStream after a reset (stream.ready with data.reset)', () => {
  const globals = globalThis as unknown as { window?: unknown; WebSocket?: unknown };
  const saved = { window: globals.window, WebSocket: globals.WebSocket };
  beforeAll(() => {
    globals.window = { location: { href: 'http://board.test/projects/p1' } };
    globals.WebSocket = FakeSocket;
  });
  afterAll(() => {
    globals.window = saved.window;
    globals.WebSocket = saved.WebSocket;
  });
  beforeEach(() => {
    FakeSocket.all = [];
  });
  const tick = () => new Promise((r) => setTimeout(r, 0));
  const latest = () => FakeSocket.all.at(-1) as FakeSocket;
  const afterOf = (s: FakeSocket) => new URL(s.url).searchParams.get('after');
  const event = (seq: number) => ({ seq, type: 'task.created', topics: [], data: { taskId: `t${seq}` }, createdAt: '' });

  test('events: resumes from the ready seq, not its own larger one, takes events numbered like old ones, and asks for a reload', async () => {
    const got: number[] = [];
    let resets = 0;
    const h = openWebSocketStream<{ seq: number }>({
      path: '/ws/events',
      seqOf: (e) => e.seq,
      dedupe: 'seen',
      resumeQuery: (seq) => ({ after: String(seq) }),
      onMessage: (e) => got.push(e.seq),
      onReset: () => resets++,
    });
    try {
      await tick();
      for (const n of [5, 6, 7]) latest().serverSends(event(n));
      latest().drop();
      await new Promise((r) => setTimeout(r, 400)); // the first retry comes after 200–300 ms
      expect(afterOf(latest())).toBe('7');
      // the server's history ends at 3: it resets, then events 4 and 5 (numbers this client saw before) are new
      latest().serverSends({ seq: 3, type: 'stream.ready', topics: [], data: { reset: true, requestedAfter: 7 }, createdAt: '' });
      expect(resets).toBe(1);
      for (const n of [4, 5, 5]) latest().serverSends(event(n));
      expect(got).toEqual([5, 6, 7, 4, 5]); // the ready message is not an event; 5 twice after the reset is one
      latest().drop();
      await new Promise((r) => setTimeout(r, 400));
      expect(afterOf(latest())).toBe('5');
      expect(FakeSocket.all).toHaveLength(3);
    } finally {
      h.close();
    }
  });

  test("events: resume from the last message's cursor, so a lower seq that commits after a higher one still comes; a reset's cursor replaces it", async () => {
    const got: number[] = [];
    let resets = 0;
    const h = openWebSocketStream<{ seq: number; cursor?: string }>({
      path: '/ws/events',
      ...eventStreamResume<{ seq: number; cursor?: string }>(),
      onMessage: (e) => got.push(e.seq),
      onReset: () => resets++,
    });
    const ready = (seq: number, cursor: string, data: Record<string, unknown> = {}) => ({ seq, type: 'stream.ready', topics: [], data, createdAt: '', cursor });
    try {
      await tick();
      latest().serverSends(ready(9, '9'));
      latest().serverSends({ ...event(11), cursor: '9:11' }); // 10 has not committed yet
      latest().drop();
      await new Promise((r) => setTimeout(r, 400));
      expect(afterOf(latest())).toBe('9:11'); // not 11: that would skip 10
      latest().serverSends({ ...event(10), cursor: '11' });
      latest().serverSends({ ...event(11), cursor: '11' }); // had already: dropped, its cursor still taken
      latest().serverSends({ ...event(12), cursor: '12' });
      latest().serverSends({ ...event(11), cursor: '13' });
      expect(got).toEqual([9, 11, 10, 12]); // a ready message is passed on too (callers ignore it)
      latest().drop();
      await new Promise((r) => setTimeout(r, 400));
      expect(afterOf(latest())).toBe('13');
      latest().serverSends(ready(4, '4', { reset: true, requestedAfter: '13' }));
      expect(resets).toBe(1);
      latest().drop();
      await new Promise((r) => setTimeout(r, 400));
      expect(afterOf(latest())).toBe('4');
      // a server without cursors (an older one): the highest seq seen, as before
      const plain = openWebSocketStream<{ seq: number; cursor?: string }>({ path: '/ws/events', ...eventStreamResume<{ seq: number; cursor?: string }>(), onMessage: () => undefined });
      try {
        await tick();
        for (const n of [5, 7, 6]) latest().serverSends(event(n));
        latest().drop();
        await new Promise((r) => setTimeout(r, 400));
        expect(afterOf(latest())).toBe('7');
      } finally {
        plain.close();
      }
    } finally {
      h.close();
    }
  });

  test('a log (resetFrom start): forgets its lines and reads the log again from its first line', async () => {
    const got: number[] = [];
    let resets = 0;
    const h = openWebSocketStream<{ seq: number }>({
      path: '/ws/execution-processes/p1/logs/normalized',
      seqOf: (e) => e.seq,
      resumeQuery: (seq) => ({ after: String(seq) }),
      resetFrom: 'start',
      onMessage: (e) => got.push(e.seq),
      onReset: () => {
        resets++;
        got.length = 0;
      },
    });
    try {
      await tick();
      for (const n of [1, 2, 3, 4]) latest().serverSends({ seq: n, message: `line ${n}` });
      latest().drop();
      await new Promise((r) => setTimeout(r, 400));
      const resumed = latest();
      expect(afterOf(resumed)).toBe('4');
      resumed.serverSends({ type: 'stream.ready', seq: 2, data: { reset: true, requestedAfter: 4 } });
      resumed.serverSends({ seq: 3, message: 'late, on the replaced socket' });
      await tick();
      expect(resets).toBe(1);
      expect(resumed.closedByClient).toBe(true);
      const fromStart = latest();
      expect(fromStart).not.toBe(resumed);
      expect(afterOf(fromStart)).toBeNull(); // no cursor: the whole log again
      for (const n of [1, 2, 3]) fromStart.serverSends({ seq: n, message: `line ${n}` });
      expect(got).toEqual([1, 2, 3]);
    } finally {
      h.close();
    }
  });
});

test('a lost stream is named by its service and by what it keeps live on the screen (the connection banner says both)', () => {
  expect(describeStream('/ws/events')).toEqual({ service: 'task', what: 'task and approval events' });
  expect(describeStream(`/ws/events?topics=${encodeURIComponent('project:p1')}&after=12`)).toEqual({ service: 'task', what: "changes to this project's tasks" });
  expect(describeStream(`/ws/events?topics=${encodeURIComponent('task:t1')}`)).toEqual({ service: 'task', what: "this task's status and attempts" });
  expect(describeStream('/ws/execution-processes/p1/logs/normalized?after=3')).toEqual({ service: 'task', what: 'the live log' });
  expect(describeStream('/api/events/task-attempts/a1/diff')).toEqual({ service: 'task', what: 'the live diff' });
  expect(describeStream('/ws/projects/p1/drafts')).toEqual({ service: 'task', what: 'follow-up drafts' });
  expect(describeStream('/svc/scheduler/api/v1/executions/e1/stream')).toEqual({ service: 'scheduler', what: 'live updates' });

  const log = Symbol('log');
  const events = Symbol('events');
  markLost(log, '/ws/execution-processes/p1/logs/normalized');
  markLost(events, '/ws/events');
  markLost(log, '/ws/execution-processes/p1/logs/normalized'); // still the same loss, since its first time
  expect(lostStreams().map((s) => s.what)).toEqual(['the live log', 'task and approval events']);
  expect(lostStreams()[0]?.since).toBeLessThanOrEqual(lostStreams()[1]?.since ?? 0);
  markOpen(log);
  expect(lostStreams().map((s) => s.what)).toEqual(['task and approval events']);
  markOpen(events);
  expect(lostStreams()).toEqual([]);
});
