/**
 * The per-webhook breaker and the delivery policy of activities/webhooks.ts, against real HTTP receivers, with the
 * policy's timings shortened through the config file (webhooks.*): pauses from 100 ms doubling to 300 ms, the breaker
 * open after 3 failed tries in a row, at most 5 tries (probes not counted), for at most 30 s, a try timed out after
 * 2 s. (Temporal's timers fire about a second late at best here, so a pause under a second is about a second.)
 * - a receiver answering 503 while 33 events are created gets the first tries and then one probe at a time, not 8
 *   requests per event (264 under the old policy); every event arrives once it is back;
 * - a delivery outlives the old policy's 8 tries (its probes do not count towards webhooks.maxTries); one that a
 *   receiver keeps refusing while it answers the others gives up after webhooks.maxTries tries; a receiver that never
 *   answers is given up after webhooks.retryForMs; the last try is in the log;
 * - deliveries held back by the breaker end as skips when their webhook is deleted.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ApplicationFailure } from '@temporalio/common';
import { WorkflowFailedError, WorkflowNotFoundError } from '@temporalio/client';
import { publishEvent } from '../../lib/events/publish';
import { eventually, startTestStack, type TestStack } from '../support/harness';

jest.setTimeout(120_000);

const MAX_TRIES = 5;
// 30 s, not 18: the storm test's events are created before the breaker opens and must not outlive retryForMs before
// the receiver is back (one did at load 16, in 20 s); the never-answering delivery that waits this out runs beside
// the other tests (below), so the longer bound costs the file little time
const RETRY_FOR_MS = 30_000;

interface Request {
  path: string;
  delivery: string;
  attempt: number;
  at: number;
  answered?: number;
}

let stack: TestStack;
let receiver: http.Server;
/** every request the receiver got, in order */
const requests: Request[] = [];
/** paths answering 503 (the receiver "down") */
const down = new Set<string>();
/** requests in flight per path, and the most seen at once after the path's breaker opened */
const inFlight = new Map<string, number>();
const hung: http.ServerResponse[] = [];

/**
 * The delivery to a receiver that never answers waits out webhooks.retryForMs (30 s): it runs from the file's start,
 * beside the tests before its own (each test has its own path and event type; a single delivery is never held back,
 * so the deferral counter the others read does not move for it), and ends before the last test.
 */
let neverAnswered: Promise<{ hookId: string; createdAt: number; error: WorkflowFailedError; endedAt: number }>;

const inject = (method: 'GET' | 'POST' | 'DELETE', path: string, payload?: unknown) => stack.app('task').inject({ method, url: path, payload: payload as object });
const base = () => `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;

beforeAll(async () => {
  receiver = http.createServer((req, res) => {
    let raw = '';
    req.on('data', (d) => {
      raw += d;
    });
    req.on('end', () => {
      const path = req.url ?? '';
      const refused = path === '/picky' && (JSON.parse(raw) as { data: { refuse?: boolean } }).data.refuse === true;
      const r: Request = { path, delivery: String(req.headers['x-armada-delivery']), attempt: Number(req.headers['x-armada-attempt']), at: Date.now() };
      requests.push(r);
      if (path === '/hang') {
        hung.push(res); // never answered: each try times out
        return;
      }
      inFlight.set(path, (inFlight.get(path) ?? 0) + 1);
      // a little time in flight, so tries sent at once overlap
      setTimeout(() => {
        inFlight.set(path, (inFlight.get(path) ?? 1) - 1);
        r.answered = down.has(path) || refused ? 503 : 200;
        res.writeHead(r.answered).end();
      }, 20);
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  stack = await startTestStack({
    services: ['task'],
    worker: true,
    file: { webhooks: { timeoutMs: 2000, maxTries: MAX_TRIES, retryForMs: RETRY_FOR_MS, openAfterFailures: 3, backoffInitialMs: 100, backoffMaxMs: 300 } },
  });
  neverAnswered = deliverToAReceiverThatNeverAnswers();
  neverAnswered.catch(() => undefined); // its test reports it
});
afterAll(async () => {
  for (const r of hung) r.destroy();
  await stack?.close();
  await new Promise((r) => receiver.close(r));
});

/** A webhook for one event type (each test its own, so no test's events reach another's webhook). */
async function hook(path: string, event: string): Promise<string> {
  const created = await inject('POST', '/api/webhooks', { url: `${base()}${path}`, events: [event], secret: 'whsec-breaker-0123' });
  expect(created.statusCode).toBe(201);
  expect(created.json().data.receiver).toEqual({ state: 'ok', failingSince: null, nextProbeAt: null, consecutiveFailures: 0 });
  return created.json().data.id as string;
}
const publish = async (event: string, n: number, data: Record<string, unknown> = {}) => {
  const seqs: number[] = [];
  for (let i = 0; i < n; i++) seqs.push((await publishEvent(stack.db, { type: event, topics: [], data: { i, ...data } })).seq);
  return seqs;
};
const receiverOf = async (hookId: string) => (await inject('GET', `/api/webhooks/${hookId}`)).json().data.receiver;
type Try = { eventSeq: number; attempt: number; statusCode: number | null; success: boolean; error: string | null; probe: boolean };
const logOf = async (hookId: string): Promise<Try[]> => {
  const rows: Try[] = [];
  for (let page = 1; ; page++) {
    const r = (await inject('GET', `/api/webhooks/${hookId}/deliveries?limit=100&page=${page}`)).json();
    rows.push(...r.data);
    if (r.data.length < 100) return rows;
  }
};
/** The workflow's end: its result, or the failure it ended with. */
async function outcome(hookId: string, seq: number): Promise<unknown> {
  const handle = (await stack.temporal.client()).workflow.getHandle(`webhook:${hookId}:${seq}`);
  return eventually(async () => handle.result().then((r) => ({ result: r }), (e: unknown) => (e instanceof WorkflowNotFoundError ? undefined : { error: e })), 60_000);
}
async function deliverToAReceiverThatNeverAnswers() {
  const hookId = await hook('/hang', 'approval.approved');
  const [seq] = (await publish('approval.approved', 1)) as [number];
  const { rows } = await stack.db.query<{ created_at: Date }>('SELECT created_at FROM events WHERE seq = $1', [seq]);
  const { error } = (await outcome(hookId, seq)) as { error: WorkflowFailedError };
  return { hookId, createdAt: rows[0]?.created_at.getTime() as number, error, endedAt: Date.now() };
}
const deferred = async () => (await stack.metrics.registry.getSingleMetric('armada_webhook_deliveries_deferred_total')?.get())?.values[0]?.value ?? 0;

test('a receiver answering 503 while 33 events are created gets one probe at a time, not 8 tries per event; all arrive once it is back', async () => {
  const hookId = await hook('/storm', 'approval.cancelled');
  down.add('/storm');
  const seqs = await publish('approval.cancelled', 3);
  // three failed tries in a row: the breaker opens
  const open = await eventually(async () => {
    const r = await receiverOf(hookId);
    return r.nextProbeAt ? r : undefined;
  }, 20_000);
  expect(open).toMatchObject({ state: 'failing', consecutiveFailures: expect.any(Number) });
  expect(open.consecutiveFailures).toBeGreaterThanOrEqual(3);
  expect(Date.parse(open.failingSince)).toBeGreaterThan(0);
  const openedAt = Date.now();
  const deferredBefore = await deferred();
  let mostAtOnce = 0;
  const watch = setInterval(() => {
    mostAtOnce = Math.max(mostAtOnce, inFlight.get('/storm') ?? 0);
  }, 2);
  seqs.push(...(await publish('approval.cancelled', 30)));
  await new Promise((r) => setTimeout(r, 5000));
  clearInterval(watch);

  const during = requests.filter((r) => r.path === '/storm');
  const afterOpen = during.filter((r) => r.at >= openedAt);
  // the old policy: 8 tries per event, 264 requests; now the three first tries (and any retry of theirs already on
  // its way) and then probes, one at a time, at least 100 ms apart (they double to 300 ms)
  expect(during.length).toBeLessThan(seqs.length);
  expect(afterOpen.length).toBeLessThanOrEqual(Math.ceil((Date.now() - openedAt) / 100));
  expect(mostAtOnce).toBeLessThanOrEqual(1);
  expect(await deferred()).toBeGreaterThan(deferredBefore);
  // the log has a row for each request and none for a try held back (read when no probe is between its request and
  // its row)
  const log = await eventually(async () => {
    const rows = await logOf(hookId);
    return rows.length === requests.filter((r) => r.path === '/storm').length ? rows : undefined;
  });
  expect(log.length).toBeGreaterThanOrEqual(during.length);
  expect(log.every((t) => t.statusCode === 503 && !t.success)).toBe(true);
  // the tries after the breaker opened were its probes (but for a retry already on its way when it opened)
  expect(log.filter((t) => t.probe).length).toBeGreaterThanOrEqual(afterOpen.length - 3);
  expect(await receiverOf(hookId)).toMatchObject({ state: 'failing', failingSince: open.failingSince });

  down.delete('/storm');
  for (const seq of seqs) expect(await outcome(hookId, seq)).toEqual({ result: { delivered: true, attempts: expect.any(Number) } });
  const delivered = requests.filter((r) => r.path === '/storm' && r.answered === 200);
  // every event arrived (at least once: a receiver de-duplicates by X-Armada-Delivery)
  expect(new Set(delivered.map((r) => r.delivery)).size).toBe(seqs.length);
  expect(new Set(delivered.map((r) => r.delivery))).toEqual(new Set(seqs.map((s) => `webhook:${hookId}:${s}`)));
  // X-Armada-Attempt is the log's try number: a try held back is not a try
  const after = await logOf(hookId);
  for (const r of delivered) expect(after).toContainEqual(expect.objectContaining({ eventSeq: Number(r.delivery.split(':')[2]), attempt: r.attempt, success: true }));
  expect(after.filter((t) => t.success)).toHaveLength(seqs.length);
  expect(await receiverOf(hookId)).toEqual({ state: 'ok', failingSince: null, nextProbeAt: null, consecutiveFailures: 0 });
});

test('a delivery outlives the old policy (8 tries) and webhooks.maxTries (5): its probes do not count; delivered once the receiver is back', async () => {
  const hookId = await hook('/long', 'approval.expired');
  down.add('/long');
  const [seq] = (await publish('approval.expired', 1)) as [number];
  await eventually(async () => (await logOf(hookId)).some((t) => t.attempt >= 9), 30_000, 50);
  down.delete('/long');
  const { result } = (await outcome(hookId, seq)) as { result: { delivered: boolean; attempts: number } };
  expect(result.delivered).toBe(true);
  expect(result.attempts).toBeGreaterThanOrEqual(10);
  expect(result.attempts).toBeLessThanOrEqual(14);
  const tries = (await logOf(hookId)).sort((a, b) => a.attempt - b.attempt);
  expect(tries.map((t) => t.attempt)).toEqual(Array.from({ length: result.attempts }, (_, i) => i + 1));
  expect(tries.map((t) => t.success)).toEqual([...Array(result.attempts - 1).fill(false), true]);
  // three tries (the third opened the breaker), then the probes
  expect(tries.map((t) => t.probe)).toEqual([false, false, false, ...Array(result.attempts - 3).fill(true)]);
  expect(requests.filter((r) => r.path === '/long').map((r) => r.attempt)).toEqual(tries.map((t) => t.attempt));
});

test('a delivery the receiver keeps refusing (503) while it answers the others: gives up after webhooks.maxTries tries, the last one in the log', async () => {
  const hookId = await hook('/picky', 'approval.rejected');
  const t0 = Date.now();
  const [seq] = (await publish('approval.rejected', 1, { refuse: true })) as [number];
  // the others' answers keep the breaker closed: each of this delivery's tries counts
  let others = 0;
  const filler = setInterval(() => {
    others++;
    void publish('approval.rejected', 1);
  }, 250);
  let ended: { error: WorkflowFailedError };
  try {
    ended = (await outcome(hookId, seq)) as { error: WorkflowFailedError };
  } finally {
    clearInterval(filler);
  }
  expect(Date.now() - t0).toBeLessThan(RETRY_FOR_MS); // so maxTries ended it, not retryForMs
  expect(others).toBeGreaterThan(0);
  const { error } = ended;
  expect(error).toBeInstanceOf(WorkflowFailedError);
  const cause = error.cause as ApplicationFailure;
  expect({ type: cause.type, nonRetryable: cause.nonRetryable, message: cause.message }).toEqual({
    type: 'WEBHOOK_GAVE_UP',
    nonRetryable: true,
    message: `gave up: delivery to webhook ${hookId}: HTTP 503`,
  });
  const tries = (await logOf(hookId)).filter((t) => t.eventSeq === seq).sort((a, b) => a.attempt - b.attempt);
  expect(tries.map((t) => [t.attempt, t.statusCode, t.success, t.probe])).toEqual(Array.from({ length: MAX_TRIES }, (_, i) => [i + 1, 503, false, false]));
  expect(requests.filter((r) => r.delivery === `webhook:${hookId}:${seq}`).map((r) => r.attempt)).toEqual(tries.map((t) => t.attempt));
  // the breaker never opened: no probe time was ever set for long (the others' answers closed it again at once)
  expect((await receiverOf(hookId)).nextProbeAt).toBeNull();
});

test('a receiver that never answers (each try times out after 2 s): the delivery gives up after webhooks.retryForMs', async () => {
  const { hookId, createdAt, error, endedAt } = await neverAnswered;
  const cause = error.cause as ApplicationFailure;
  expect(cause.type).toBe('WEBHOOK_GAVE_UP');
  expect(cause.message.startsWith(`gave up: delivery to webhook ${hookId}: `)).toBe(true);
  expect(endedAt - createdAt).toBeGreaterThanOrEqual(RETRY_FOR_MS - 1000);
  const tries = (await logOf(hookId)).sort((a, b) => a.attempt - b.attempt);
  expect(tries.length).toBeGreaterThanOrEqual(3);
  expect(tries.slice(3).every((t) => t.probe)).toBe(true);
  expect(tries.map((t) => t.attempt)).toEqual(Array.from({ length: tries.length }, (_, i) => i + 1));
  expect(tries.every((t) => t.error === 'timed out')).toBe(true);
  expect(requests.filter((r) => r.path === '/hang')).toHaveLength(tries.length);
});

test('deliveries held back by an open breaker end as skips when their webhook is deleted', async () => {
  const hookId = await hook('/deleted', 'approval.created');
  down.add('/deleted');
  const seqs = await publish('approval.created', 3);
  await eventually(async () => (await receiverOf(hookId)).nextProbeAt, 20_000);
  seqs.push(...(await publish('approval.created', 5)));
  const deferredBefore = await deferred();
  await eventually(async () => (await deferred()) > deferredBefore, 20_000);
  // every delivery started (the dispatcher starts none for a webhook already deleted)
  const client = await stack.temporal.client();
  for (const seq of seqs) await eventually(async () => client.workflow.getHandle(`webhook:${hookId}:${seq}`).describe().catch(() => undefined), 20_000);
  expect((await inject('DELETE', `/api/webhooks/${hookId}`)).statusCode).toBe(200);
  for (const seq of seqs) expect(await outcome(hookId, seq)).toEqual({ result: { delivered: false, skipped: true } });
});
