import crypto from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { ApplicationFailure } from '@temporalio/common';
import { WorkflowFailedError, WorkflowNotFoundError } from '@temporalio/client';
import type { FastifyInstance } from 'fastify';
import { buildService } from '../../api/services';
import { insertWebhook } from '../../lib/db/webhooks';
import { publishEvent } from '../../lib/events/publish';
import { newId } from '../../lib/ids';
import { sealSecret } from '../../lib/secretBox';
import { recordHistory } from '../support/attemptHelpers';
import { createProjectAndTask, insertAttempt } from '../support/attempts';
import { eventually, logger, startTestStack, type TestStack } from '../support/harness';

const SECRET = 'whsec-test-0123';

interface Received {
  headers: http.IncomingHttpHeaders;
  raw: string;
  body: { event: string; timestamp: string; data: Record<string, unknown>; signature: string };
}

let stack: TestStack;
let receiver: http.Server;
let url: string;
/** a receiver path that refuses every delivery with 400 */
let rejectUrl: string;
const received: Received[] = [];
/** event type → how many more times to answer 500 */
const failFirst = new Map<string, number>();
/** bytes the /flood receiver wrote before the delivery hung up */
let flooded = 0;
/** deliveries to /held, not answered yet */
const held: http.ServerResponse[] = [];

/** The receiver's recipe from docs/webhooks.md: HMAC-SHA256 over the raw body without its trailing signature member. */
function verify(raw: string, secret: string): boolean {
  const m = /,"signature":"(sha256=[0-9a-f]{64})"\}$/.exec(raw);
  if (!m) return false;
  const signed = `${raw.slice(0, m.index)}}`;
  const expected = `sha256=${crypto.createHmac('sha256', secret).update(signed).digest('hex')}`;
  return crypto.timingSafeEqual(Buffer.from(expected), Buffer.from(m[1] as string));
}

const inject = (method: 'GET' | 'POST' | 'DELETE', path: string, payload?: unknown) =>
  stack.app('task').inject({ method, url: path, payload: payload as object });

beforeAll(async () => {
  stack = await startTestStack({ services: ['task'], worker: true });
  receiver = http.createServer((req, res) => {
    let raw = '';
    req.on('data', (d) => {
      raw += d;
    });
    req.on('end', () => {
      if (req.url === '/reject') {
        res.writeHead(400).end('no such hook');
        return;
      }
      if (req.url === '/moved') {
        res.writeHead(301, { location: 'https://hooks.example.test/new-place' }).end();
        return;
      }
      if (req.url === '/moved-with-password') {
        res.writeHead(302, { location: 'https://hook-user:hook-pass-123456@hooks.example.test/new-place' }).end();
        return;
      }
      if (req.url === '/reset') {
        req.socket.destroy(); // no answer: the connection is cut
        return;
      }
      if (req.url === '/held') {
        held.push(res); // answered by the test
        return;
      }
      if (req.url === '/flood') {
        // a receiver that answers 200 with an endless body: the delivery must not read it
        res.writeHead(200, { 'content-type': 'application/octet-stream' });
        const block = Buffer.alloc(64 * 1024);
        const write = () => {
          while (!res.destroyed && flooded < 1024 * 1024 * 1024) {
            flooded += block.length;
            if (!res.write(block)) return void res.once('drain', write);
          }
          res.end();
        };
        write();
        return;
      }
      const body = JSON.parse(raw) as Received['body'];
      received.push({ headers: req.headers, raw, body });
      const left = failFirst.get(body.event) ?? 0;
      if (left > 0) {
        failFirst.set(body.event, left - 1);
        res.writeHead(500).end('try again');
      } else res.writeHead(200).end('ok');
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
  rejectUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/reject`;
});
afterAll(async () => {
  for (const r of held) r.destroy();
  await stack.close();
  await new Promise((r) => receiver.close(r));
});

describe('outbound webhooks', () => {
  let webhookId: string;

  test('register, list, get; non-http URLs and unknown events are 400', async () => {
    const r = await inject('POST', '/api/webhooks', { url, events: ['task.created', 'attempt.failed', 'approval.created'], secret: SECRET });
    expect(r.statusCode).toBe(201);
    const w = r.json().data;
    webhookId = w.id;
    expect(w).toMatchObject({ url, events: ['task.created', 'attempt.failed', 'approval.created'], active: true });
    expect(w.secret).toBeUndefined();
    expect((await inject('GET', '/api/webhooks')).json().data.map((x: { id: string }) => x.id)).toContain(webhookId);
    expect((await inject('GET', `/api/webhooks/${webhookId}`)).json().data.id).toBe(webhookId);

    for (const bad of [
      { url: 'ftp://example.com/x', events: ['task.created'], secret: 's' },
      { url: 'not a url', events: ['task.created'], secret: 's' },
      { url: 'https://user:pw@example.com/x', events: ['task.created'], secret: 's' },
      { url, events: ['task.exploded'], secret: 's' },
      { url, events: [], secret: 's' },
      { url, events: ['task.created'] },
    ]) {
      const b = await inject('POST', '/api/webhooks', bad);
      expect(b.statusCode).toBe(400);
      expect(b.json().error.code).toBe('VALIDATION_ERROR');
    }
  });

  test('task.created is delivered with a signature that verifies (body field and header)', async () => {
    const { taskId, projectId } = await createProjectAndTask(stack);
    const got = await eventually(async () => received.find((r) => r.body.event === 'task.created' && r.body.data.taskId === taskId));
    expect(got.body.data).toMatchObject({ taskId, projectId, status: 'pending' });
    expect(Date.parse(got.body.timestamp)).toBeGreaterThan(0);
    expect(got.body.signature).toMatch(/^sha256=[0-9a-f]{64}$/);
    expect(got.headers['x-armada-signature']).toBe(got.body.signature);
    expect(got.headers['x-armada-event']).toBe('task.created');
    expect(verify(got.raw, SECRET)).toBe(true);
    expect(verify(got.raw, 'wrong-secret')).toBe(false);
    // the JSON recipe (parse, drop signature, re-serialise) gives the same bytes
    const { signature, ...rest } = got.body;
    expect(`sha256=${crypto.createHmac('sha256', SECRET).update(JSON.stringify(rest)).digest('hex')}`).toBe(signature);
  });

  test('attempt.failed: 500, 500, then 200 — delivered on the third try, the log shows all three', async () => {
    const { taskId } = await createProjectAndTask(stack);
    const attemptId = await insertAttempt(stack, taskId, 'failed');
    failFirst.set('attempt.failed', 2);
    const ev = await publishEvent(stack.db, {
      type: 'attempt.failed',
      topics: [`attempt:${attemptId}`, `task:${taskId}`],
      data: { attemptId, taskId, status: 'failed', duration: 12.5, error: 'exit code 1' },
    });
    const log = await eventually(
      async () => {
        const r = (await inject('GET', `/api/webhooks/${webhookId}/deliveries?limit=100`)).json().data.filter((d: { eventSeq: number }) => d.eventSeq === ev.seq);
        return r.length === 3 && r.some((d: { success: boolean }) => d.success) ? r : undefined;
      },
      30_000,
      250,
    );
    const tries = [...log].sort((a, b) => a.attempt - b.attempt).map((d) => [d.attempt, d.statusCode, d.success]);
    expect(tries).toEqual([
      [1, 500, false],
      [2, 500, false],
      [3, 200, true],
    ]);
    const bodies = received.filter((r) => r.body.event === 'attempt.failed' && r.body.data.attemptId === attemptId);
    expect(bodies).toHaveLength(3);
    for (const b of bodies) expect(verify(b.raw, SECRET)).toBe(true);
    expect(bodies[0]?.body.data).toMatchObject({ attemptId, taskId, status: 'failed', duration: 12.5 });
    const handle = (await stack.temporal.client()).workflow.getHandle(`webhook:${webhookId}:${ev.seq}`);
    expect(await handle.result()).toEqual({ delivered: true, attempts: 3 });
  });

  test('a delivery that gave up (400) ends Failed in Temporal with the error; its try stays in the delivery log', async () => {
    const rejecting = (await inject('POST', '/api/webhooks', { url: rejectUrl, events: ['attempt.failed'], secret: SECRET })).json().data.id as string;
    try {
      const { taskId } = await createProjectAndTask(stack);
      const attemptId = await insertAttempt(stack, taskId, 'failed');
      const ev = await publishEvent(stack.db, { type: 'attempt.failed', topics: [`attempt:${attemptId}`], data: { attemptId, taskId, status: 'failed', note: 'rejected' } });
      const handle = (await stack.temporal.client()).workflow.getHandle(`webhook:${rejecting}:${ev.seq}`);
      const err = await eventually(async () => handle.result().then(() => ({ resolved: true }) as const, (e: unknown) => (e instanceof WorkflowNotFoundError ? undefined : e)));
      expect(err).toBeInstanceOf(WorkflowFailedError);
      const cause = (err as WorkflowFailedError).cause as ApplicationFailure;
      expect(cause).toBeInstanceOf(ApplicationFailure);
      expect({ type: cause.type, nonRetryable: cause.nonRetryable, message: cause.message }).toEqual({
        type: 'WEBHOOK_GAVE_UP',
        nonRetryable: true,
        message: `gave up: delivery to webhook ${rejecting}: HTTP 400`,
      });
      expect((await handle.describe()).status.name).toBe('FAILED');
      await recordHistory(stack, `webhook:${rejecting}:${ev.seq}`, 'webhook-gave-up-failed');
      const log = (await inject('GET', `/api/webhooks/${rejecting}/deliveries?limit=100`)).json().data.filter((d: { eventSeq: number }) => d.eventSeq === ev.seq);
      expect(log.map((d: { attempt: number; statusCode: number; success: boolean; error: string }) => [d.attempt, d.statusCode, d.success, d.error])).toEqual([[1, 400, false, 'HTTP 400']]);
      // the other webhook got the same event: its delivery is untouched by this one's failure
      await eventually(async () => received.some((r) => r.body.data.note === 'rejected'));
    } finally {
      await inject('DELETE', `/api/webhooks/${rejecting}`);
    }
  });

  test('events committed while the API was down are dispatched when it starts again', async () => {
    await stack.app('task').close();
    const { rows } = await stack.db.query<{ id: string }>('SELECT id FROM attempts LIMIT 1');
    const attemptId = rows[0]?.id as string;
    const ev = await publishEvent(stack.db, { type: 'attempt.failed', topics: [`attempt:${attemptId}`], data: { attemptId, status: 'failed', note: 'while down' } });
    await new Promise((r) => setTimeout(r, 300));
    expect(received.some((r) => r.body.data.note === 'while down')).toBe(false);
    const app: FastifyInstance = await buildService('task', { db: stack.db, config: stack.config, keys: stack.keys, temporal: stack.temporal, logger, metrics: stack.metrics });
    stack.apps.task = app;
    await app.ready();
    const got = await eventually(async () => received.find((r) => r.body.data.note === 'while down'));
    expect(got.headers['x-armada-delivery']).toBe(`webhook:${webhookId}:${ev.seq}`);
  });

  test('an event whose transaction commits 11 s late is delivered (the dispatcher once skipped it after 10 s), and so is the one after it', async () => {
    const { rows } = await stack.db.query<{ id: string }>('SELECT id FROM attempts LIMIT 1');
    const attemptId = rows[0]?.id as string;
    const slow = await stack.db.connect();
    try {
      await slow.query('BEGIN');
      await publishEvent(slow, { type: 'attempt.failed', topics: [`attempt:${attemptId}`], data: { attemptId, status: 'failed', note: 'slow commit' } });
      await publishEvent(stack.db, { type: 'attempt.failed', topics: [`attempt:${attemptId}`], data: { attemptId, status: 'failed', note: 'after slow' } });
      await new Promise((r) => setTimeout(r, 11_000));
      // the later event waits for the earlier seq: webhooks go out in seq order per pass, none is skipped
      expect(received.some((r) => r.body.data.note === 'after slow')).toBe(false);
      await slow.query('COMMIT');
    } finally {
      slow.release();
    }
    await eventually(async () => received.some((r) => r.body.data.note === 'slow commit') && received.some((r) => r.body.data.note === 'after slow'), 20_000, 100);
  }, 60_000);

  test('a rolled-back event does not hold later ones back', async () => {
    const { rows } = await stack.db.query<{ id: string }>('SELECT id FROM attempts LIMIT 1');
    const attemptId = rows[0]?.id as string;
    const c = await stack.db.connect();
    await c.query('BEGIN');
    await publishEvent(c, { type: 'attempt.failed', topics: [`attempt:${attemptId}`], data: { attemptId, status: 'failed', note: 'rolled back' } });
    await c.query('ROLLBACK');
    c.release();
    const t0 = Date.now();
    await publishEvent(stack.db, { type: 'attempt.failed', topics: [`attempt:${attemptId}`], data: { attemptId, status: 'failed', note: 'after rollback' } });
    await eventually(async () => received.some((r) => r.body.data.note === 'after rollback'), 20_000, 100);
    expect(Date.now() - t0).toBeLessThan(8000); // the settle time (1 s) and two passes, not a fixed 10 s grace
    expect(received.some((r) => r.body.data.note === 'rolled back')).toBe(false);
  });

  test('a receiver answering 200 with an endless body: delivered, the body not read (the worker hangs up)', async () => {
    const created = await inject('POST', '/api/webhooks', { url: url.replace('/hook', '/flood'), events: ['task.created'], secret: SECRET });
    expect(created.statusCode).toBe(201);
    const floodId = created.json().data.id as string;
    await createProjectAndTask(stack);
    const delivered = await eventually(async () => {
      const r = await inject('GET', `/api/webhooks/${floodId}/deliveries`);
      return (r.json().data as { success: boolean; statusCode: number }[]).find((d) => d.success);
    }, 30_000);
    expect(delivered.statusCode).toBe(200);
    await new Promise((r) => setTimeout(r, 500));
    expect(flooded).toBeLessThan(64 * 1024 * 1024); // of 1 GiB offered
    expect((await inject('DELETE', `/api/webhooks/${floodId}`)).statusCode).toBeLessThan(300);
  });

  test('delete: gone from the list; unknown ids are 404', async () => {
    expect((await inject('DELETE', `/api/webhooks/${webhookId}`)).json().data).toEqual({ deleted: true, webhookId });
    expect((await inject('DELETE', `/api/webhooks/${webhookId}`)).statusCode).toBe(404);
    expect((await inject('GET', `/api/webhooks/${webhookId}`)).statusCode).toBe(404);
    expect((await inject('GET', `/api/webhooks/${webhookId}/deliveries`)).statusCode).toBe(404);
  });
});

describe('receivers that fail', () => {
  const port = () => (receiver.address() as AddressInfo).port;
  /** A webhook for approval.cancelled only (no other test publishes it), and one such event. */
  async function hookAndEvent(hookUrl: string): Promise<{ hookId: string; seq: number }> {
    const created = await inject('POST', '/api/webhooks', { url: hookUrl, events: ['approval.cancelled'], secret: SECRET });
    expect(created.statusCode).toBe(201);
    const hookId = created.json().data.id as string;
    const ev = await publishEvent(stack.db, { type: 'approval.cancelled', topics: [], data: { approvalId: hookId } });
    return { hookId, seq: ev.seq };
  }
  /** The tries of the webhook's own event (a webhook made earlier in a test also gets the later ones). */
  const triesOf = async (hookId: string, seq: number) =>
    ((await inject('GET', `/api/webhooks/${hookId}/deliveries?limit=100`)).json().data as { eventSeq: number; attempt: number; statusCode: number | null; success: boolean; error: string | null }[])
      .filter((d) => d.eventSeq === seq)
      .sort((a, b) => a.attempt - b.attempt)
      .map((d) => [d.attempt, d.statusCode, d.success, d.error]);

  test('a receiver that is down or cuts the connection: each try in the log says why, not "fetch failed"', async () => {
    const closed = http.createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const downUrl = `http://127.0.0.1:${(closed.address() as AddressInfo).port}/hook`;
    await new Promise((r) => closed.close(r));
    const down = await hookAndEvent(downUrl);
    const reset = await hookAndEvent(`http://127.0.0.1:${port()}/reset`);
    try {
      const downTries = await eventually(async () => {
        const tries = await triesOf(down.hookId, down.seq);
        return tries.length >= 2 ? tries : undefined;
      }, 30_000, 250);
      expect(downTries.slice(0, 2)).toEqual([
        [1, null, false, 'request failed: connection refused (ECONNREFUSED)'],
        [2, null, false, 'request failed: connection refused (ECONNREFUSED)'],
      ]);
      const resetTries = await eventually(async () => {
        const tries = await triesOf(reset.hookId, reset.seq);
        return tries.length >= 1 ? tries : undefined;
      }, 30_000, 250);
      expect(resetTries[0]?.[3]).toMatch(/^request failed: .+ \((ECONNRESET|UND_ERR_SOCKET)\)$/);
    } finally {
      await inject('DELETE', `/api/webhooks/${down.hookId}`);
      await inject('DELETE', `/api/webhooks/${reset.hookId}`);
    }
  });

  test('a redirect is final: one try, the log says where it points and what to do; the workflow gave up', async () => {
    const { hookId, seq } = await hookAndEvent(`http://127.0.0.1:${port()}/moved`);
    try {
      const handle = (await stack.temporal.client()).workflow.getHandle(`webhook:${hookId}:${seq}`);
      const err = await eventually(async () => handle.result().then(() => ({ resolved: true }) as const, (e: unknown) => (e instanceof WorkflowNotFoundError ? undefined : e)), 30_000);
      const redirect = 'HTTP 301, a redirect to https://hooks.example.test/new-place (not followed): register that URL instead';
      expect(((err as WorkflowFailedError).cause as ApplicationFailure).message).toBe(`gave up: delivery to webhook ${hookId}: ${redirect}`);
      expect(await triesOf(hookId, seq)).toEqual([[1, 301, false, redirect]]);
    } finally {
      await inject('DELETE', `/api/webhooks/${hookId}`);
    }
  });

  test('a redirect to a URL with a password: the try and the failure show it as ***', async () => {
    const { hookId, seq } = await hookAndEvent(`http://127.0.0.1:${port()}/moved-with-password`);
    try {
      const handle = (await stack.temporal.client()).workflow.getHandle(`webhook:${hookId}:${seq}`);
      const err = await eventually(async () => handle.result().then(() => ({ resolved: true }) as const, (e: unknown) => (e instanceof WorkflowNotFoundError ? undefined : e)), 30_000);
      const redirect = 'HTTP 302, a redirect to https://hook-user:***@hooks.example.test/new-place (not followed): register that URL instead';
      expect(((err as WorkflowFailedError).cause as ApplicationFailure).message).toBe(`gave up: delivery to webhook ${hookId}: ${redirect}`);
      expect(await triesOf(hookId, seq)).toEqual([[1, 302, false, redirect]]);
      const history = JSON.stringify(await handle.fetchHistory());
      expect(history).not.toContain('hook-pass-123456');
      expect(JSON.stringify((await inject('GET', `/api/webhooks/${hookId}/deliveries`)).json())).not.toContain('hook-pass-123456');
    } finally {
      await inject('DELETE', `/api/webhooks/${hookId}`);
    }
  });

  test('a webhook deleted while its delivery is in flight: the delivery ends skipped, without a failed try', async () => {
    const { hookId, seq } = await hookAndEvent(`http://127.0.0.1:${port()}/held`);
    await eventually(async () => held.length > 0, 30_000);
    expect((await inject('DELETE', `/api/webhooks/${hookId}`)).statusCode).toBe(200);
    held.shift()?.writeHead(200).end('ok');
    const handle = (await stack.temporal.client()).workflow.getHandle(`webhook:${hookId}:${seq}`);
    expect(await handle.result()).toEqual({ delivered: false, skipped: true });
    // one try, which completed: before, its log row broke the foreign key, the try failed and a second one skipped
    const started = (await handle.fetchHistory()).events?.filter((e) => e.activityTaskStartedEventAttributes) ?? [];
    expect(started.map((e) => e.activityTaskStartedEventAttributes?.attempt)).toEqual([1]);
    expect(started[0]?.activityTaskStartedEventAttributes?.lastFailure ?? null).toBeNull();
  });

  test('a URL on a port fetch never connects to: refused at registration (400 over HTTP, the document says so); a stored one gives up at once, its row saying why', async () => {
    const base = await stack.app('task').listen({ port: 0, host: '127.0.0.1' });
    for (const [badUrl, badPort] of [
      ['http://example.com:6667/hook', 6667],
      ['https://hooks.example.com:06000/x', 6000],
      ['http://[::1]:10080/', 10080],
    ] as const) {
      const res = await fetch(`${base}/api/webhooks`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ url: badUrl, events: ['task.created'], secret: SECRET }) });
      const why = `port ${badPort} is one fetch never connects to (a "bad port" of the Fetch standard), so nothing can be delivered there: use another port`;
      expect([res.status, await res.json()]).toEqual([400, { success: false, error: { code: 'VALIDATION_ERROR', message: `url: ${why}`, details: { url: why } }, meta: expect.any(Object) }]);
    }
    const doc = (await (await fetch(`${base}/api/openapi.json`)).json()) as { paths: Record<string, { post: { requestBody: { content: Record<string, { schema: { properties: Record<string, { description: string }> } }> } } }> };
    const urlSchema = doc.paths['/api/webhooks'].post.requestBody.content['application/json'].schema.properties.url;
    expect(urlSchema.description).toContain('6665, 6666, 6667, 6668, 6669');
    expect(urlSchema.description).toContain('refused with 400 VALIDATION_ERROR naming the port; serve the receiver on another port');
    const fine = await fetch(`${base}/api/webhooks`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ url: 'http://127.0.0.1:6670/hook', events: ['task.created'], secret: SECRET }) });
    expect(fine.status).toBe(201);
    await inject('DELETE', `/api/webhooks/${((await fine.json()) as { data: { id: string } }).data.id}`);

    // a webhook registered before the API refused such URLs, whose breaker had opened on the failures that followed
    const hookId = newId();
    await insertWebhook(stack.db, { id: hookId, url: 'http://127.0.0.1:6667/hook', events: ['approval.cancelled'], sealedSecret: sealSecret(stack.keys.encryption, SECRET) });
    await stack.db.query(`INSERT INTO webhook_receivers (webhook_id, consecutive_failures, failing_since, probe_at) VALUES ($1, 5, now(), now() + interval '1 hour')`, [hookId]);
    try {
      const ev = await publishEvent(stack.db, { type: 'approval.cancelled', topics: [], data: { approvalId: hookId } });
      const handle = (await stack.temporal.client()).workflow.getHandle(`webhook:${hookId}:${ev.seq}`);
      const err = await eventually(async () => handle.result().then(() => ({ resolved: true }) as const, (e: unknown) => (e instanceof WorkflowNotFoundError ? undefined : e)), 30_000);
      const notSent = 'not sent: port 6667 is one fetch never connects to (a "bad port" of the Fetch standard), so nothing can be delivered there: serve the receiver on another port and register the webhook with that URL';
      expect(err).toBeInstanceOf(WorkflowFailedError);
      expect(((err as WorkflowFailedError).cause as ApplicationFailure).message).toBe(`gave up: delivery to webhook ${hookId}: ${notSent}`);
      expect(await triesOf(hookId, ev.seq)).toEqual([[1, null, false, notSent]]);
      // one try of the activity, not retried (before: held back by the breaker, then retried for webhooks.retryForMs)
      const started = (await handle.fetchHistory()).events?.filter((e) => e.activityTaskStartedEventAttributes) ?? [];
      expect(started.map((e) => e.activityTaskStartedEventAttributes?.attempt)).toEqual([1]);
      // the breaker is as it was: no receiver was tried
      expect((await inject('GET', `/api/webhooks/${hookId}`)).json().data.receiver.consecutiveFailures).toBe(5);
    } finally {
      await inject('DELETE', `/api/webhooks/${hookId}`);
    }
  });
});
