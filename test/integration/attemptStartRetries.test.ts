/**
 * Starting an attempt never waits on Temporal inside a transaction (docs/attempts.md, "Starting an attempt"). The task
 * API talks to Temporal through a TCP proxy that the tests make slow (holds bytes) or unreachable; the worker talks to
 * Temporal directly, so attempts run once started.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { buildService } from '../../api/services';
import { reconcilePendingStarts, startNewAttempt } from '../../api/task/attemptService';
import { createTemporalHandle, type TemporalHandle } from '../../lib/temporal/client';
import { agentConfig, api } from '../support/attemptHelpers';
import { env, eventually, logger, startTestStack, type TestStack } from '../support/harness';
import { startTcpProxy, type TcpProxy } from '../support/tcpProxy';

let stack: TestStack;
let proxy: TcpProxy;
let proxied: TemporalHandle;
let app: FastifyInstance;
let receiver: http.Server;
const received: { event: string; data: { attemptId?: string } }[] = [];
let h: ReturnType<typeof api>;

beforeAll(async () => {
  stack = await startTestStack({
    services: [],
    worker: true,
    // the reconciler's periodic pass stays out of the way (60 s); the third test runs a pass itself
    file: agentConfig({ attempts: { heartbeatTimeoutMs: 5000, killGraceMs: 1000, startTimeoutMs: 8000, startReconcileAfterMs: 600_000 } }),
  });
  proxy = await startTcpProxy(env('ARMADA_TEST_TEMPORAL_ADDRESS'));
  proxied = createTemporalHandle(proxy.address, stack.config.temporal.namespace);
  app = await buildService('task', { db: stack.db, config: stack.config, keys: stack.keys, temporal: proxied, logger, metrics: stack.metrics });
  stack.apps.task = app;
  await app.ready();
  h = api(stack);
  receiver = http.createServer((req, res) => {
    let raw = '';
    req.on('data', (d) => {
      raw += d;
    });
    req.on('end', () => {
      received.push(JSON.parse(raw));
      res.writeHead(200).end('ok');
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
  expect((await h.inject('POST', '/api/webhooks', { url, events: ['attempt.started'], secret: 'whsec-start' })).statusCode).toBe(201);
  await proxied.client(); // connected before the proxy misbehaves
});
afterAll(async () => {
  proxy.setMode('forward');
  await stack.close(); // closes the app too
  await proxied.close();
  await proxy.close();
  await new Promise((r) => receiver.close(r));
});

const attemptsOf = async (taskId: string) =>
  (await stack.db.query<{ id: string; start_pending_since: Date | null }>('SELECT id, start_pending_since FROM attempts WHERE task_id = $1', [taskId])).rows;
/** armada_attempts_total of the scripted agent with this status, as GET /metrics of the task service says it. */
const attemptsCounted = async (status: string) =>
  Number(new RegExp(`armada_attempts_total\\{llm="scripted",status="${status}"\\} (\\d+)`).exec((await h.inject('GET', '/metrics')).body)?.[1] ?? 0);
const startedEvents = async (attemptId: string) =>
  Number((await stack.db.query("SELECT count(*) AS n FROM events WHERE type = 'attempt.started' AND data->>'attemptId' = $1", [attemptId])).rows[0].n);

test('a start waiting on a slow Temporal holds no lock; once Temporal answers it is 200, runs, and attempt.started reaches the webhook', async () => {
  const p = await h.project();
  const taskId = await h.task(p.id, 'NOOP slow start');
  proxy.setMode('hold');
  const answer = h.inject('POST', `/api/tasks/${taskId}/start`, { llm: 'scripted' });
  try {
    // committed before Temporal was asked, marked pending; no attempt.started yet
    const [row] = await eventually(async () => {
      const rows = await attemptsOf(taskId);
      return rows.length === 1 ? rows : undefined;
    }, 10_000, 50);
    expect(row?.start_pending_since).not.toBeNull();
    expect(await startedEvents(row?.id as string)).toBe(0);
    // the task row is not locked while Temporal is slow
    const t0 = Date.now();
    const patched = await h.inject('PATCH', `/api/tasks/${taskId}`, { description: 'edited while the start waits' });
    expect(patched.statusCode).toBe(200);
    expect(Date.now() - t0).toBeLessThan(2000);
    await new Promise((r) => setTimeout(r, 1500));
  } finally {
    proxy.setMode('forward');
  }
  const r = await answer;
  expect(r.statusCode).toBe(200);
  const attemptId = r.json().data.attemptId as string;
  // the confirmation follows the answer (docs/attempts.md, "Starting an attempt")
  await eventually(async () => ((await attemptsOf(taskId))[0]?.start_pending_since === null ? true : undefined), 10_000, 20);
  expect(await startedEvents(attemptId)).toBe(1);
  await eventually(async () => received.some((e) => e.event === 'attempt.started' && e.data.attemptId === attemptId), 30_000, 100);
  await h.until(attemptId, ['completed'], 60_000);
  expect((await h.inject('GET', `/api/tasks/${taskId}`)).json().data.status).toBe('review');
}, 120_000);

test('a start Temporal cannot take answers 503 and leaves nothing; the same idempotency key then starts one that runs', async () => {
  const p = await h.project();
  const taskId = await h.task(p.id, 'NOOP refused start');
  const before = (await h.inject('GET', `/api/tasks/${taskId}`)).json().data;
  const eventsBefore = Number((await stack.db.query('SELECT max(seq) AS s FROM events')).rows[0].s);
  proxy.setMode('refuse');
  let r: Awaited<ReturnType<typeof h.inject>>;
  try {
    r = await h.inject('POST', `/api/tasks/${taskId}/start`, { llm: 'scripted' }, { 'idempotency-key': `k-${taskId}` });
  } finally {
    proxy.setMode('forward');
  }
  expect(r.statusCode).toBe(503);
  expect(r.json()).toMatchObject({ success: false, error: { code: 'SERVICE_UNAVAILABLE' } });
  expect(r.headers['retry-after']).toBe('1'); // like every 503 of a dependency outage (docs/operations.md)
  expect(r.body).not.toMatch(/\n\s+at /);
  expect(await attemptsOf(taskId)).toEqual([]);
  expect((await stack.db.query('SELECT count(*) AS n FROM processes WHERE task_id = $1', [taskId])).rows[0].n).toBe('0');
  // the task is back exactly as it was (phase 1 had moved it to in_progress), and nothing was announced
  expect((await h.inject('GET', `/api/tasks/${taskId}`)).json().data).toEqual(before);
  const later = await stack.db.query("SELECT type FROM events WHERE seq > $1 AND data->>'taskId' = $2", [eventsBefore, taskId]);
  expect(later.rows).toEqual([]);

  const again = await eventually(async () => {
    const a = await h.inject('POST', `/api/tasks/${taskId}/start`, { llm: 'scripted' }, { 'idempotency-key': `k-${taskId}` });
    return a.statusCode === 200 ? a : undefined;
  }, 30_000, 500);
  const attemptId = again.json().data.attemptId as string;
  expect((await attemptsOf(taskId)).map((a) => a.id)).toEqual([attemptId]);
  await h.until(attemptId, ['completed'], 60_000);
  await eventually(async () => received.some((e) => e.event === 'attempt.started' && e.data.attemptId === attemptId), 30_000, 100);
}, 120_000);

test('a start whose process never got through to Temporal is finished by the reconciler; the late original joins it (one attempt.started, counted started once)', async () => {
  const p = await h.project();
  const taskId = await h.task(p.id, 'NOOP orphaned start');
  const startedBefore = await attemptsCounted('started');
  proxy.setMode('hold');
  const answer = h.inject('POST', `/api/tasks/${taskId}/start`, { llm: 'scripted' });
  let attemptId: string;
  try {
    attemptId = (
      await eventually(async () => {
        const rows = await attemptsOf(taskId);
        return rows[0];
      }, 10_000, 50)
    ).id;
    // another API process's reconciler, with its own (working) way to Temporal
    const finished = await reconcilePendingStarts({ db: stack.db, config: stack.config, temporal: stack.temporal, metrics: stack.metrics }, 0);
    expect(finished).toBe(1);
    expect(await startedEvents(attemptId)).toBe(1);
    // the reconciler's confirmation counts it started (before session 52 the reconciler counted nothing: a start whose request never answered was never counted)
    expect(await attemptsCounted('started')).toBe(startedBefore + 1);
    expect((await (await stack.temporal.client()).workflow.getHandle(`attempt:${attemptId}`).describe()).status.name).toMatch(/RUNNING|COMPLETED/);
  } finally {
    proxy.setMode('forward');
  }
  const r = await answer;
  expect(r.statusCode).toBe(200);
  expect(r.json().data.attemptId).toBe(attemptId);
  await h.until(attemptId, ['completed'], 60_000);
  await eventually(async () => received.some((e) => e.event === 'attempt.started' && e.data.attemptId === attemptId), 30_000, 100);
  expect(await startedEvents(attemptId)).toBe(1);
  await new Promise((r) => setTimeout(r, 1000));
  expect(received.filter((e) => e.event === 'attempt.started' && e.data.attemptId === attemptId)).toHaveLength(1);
  // and not once more by the late original, which joined the run the reconciler had confirmed
  expect(await attemptsCounted('started')).toBe(startedBefore + 1);
}, 120_000);

test('starting a created attempt that Temporal refuses answers 503 and leaves it created, without a process', async () => {
  const p = await h.project();
  const taskId = await h.task(p.id, 'NOOP created then refused');
  const created = await h.inject('POST', '/api/attempts', { taskId, llm: 'scripted' });
  expect(created.statusCode).toBe(200);
  const id = created.json().data.id as string;
  proxy.setMode('refuse');
  let r: Awaited<ReturnType<typeof h.inject>>;
  try {
    r = await h.inject('POST', `/api/attempts/${id}/start`);
  } finally {
    proxy.setMode('forward');
  }
  expect(r.statusCode).toBe(503);
  const row = (await stack.db.query('SELECT status, started_at, start_pending_since FROM attempts WHERE id = $1', [id])).rows[0];
  expect(row).toEqual({ status: 'created', started_at: null, start_pending_since: null });
  expect((await stack.db.query('SELECT count(*) AS n FROM processes WHERE attempt_id = $1', [id])).rows[0].n).toBe('0');
  expect(await startedEvents(id)).toBe(0);
  const s = await eventually(async () => {
    const a = await h.inject('POST', `/api/attempts/${id}/start`);
    return a.statusCode === 200 ? a : undefined;
  }, 30_000, 500);
  expect(s.json().data).toMatchObject({ id, status: 'running' });
  await h.until(id, ['completed'], 60_000);
}, 120_000);

test('right after a 200 the task reads in progress; task.status_changed (from pending) and attempt.started follow once each, in that order', async () => {
  const p = await h.project();
  const taskId = await h.task(p.id, 'NOOP read after start');
  const seq0 = Number((await stack.db.query('SELECT max(seq) AS s FROM events')).rows[0].s);
  const r = await h.inject('POST', `/api/tasks/${taskId}/start`, { llm: 'scripted' });
  expect(r.statusCode).toBe(200);
  const attemptId = r.json().data.attemptId as string;
  expect((await h.inject('GET', `/api/tasks/${taskId}`)).json().data.status).toBe('in_progress');
  expect((await h.inject('GET', `/api/attempts/${attemptId}`)).json().data.status).toMatch(/running|completed/);
  const events = await eventually(async () => {
    const { rows } = await stack.db.query<{ type: string; data: Record<string, unknown> }>(
      "SELECT type, data FROM events WHERE seq > $1 AND data->>'taskId' = $2 AND type IN ('task.status_changed', 'attempt.started') ORDER BY seq",
      [seq0, taskId],
    );
    return rows.some((e) => e.type === 'attempt.started') ? rows : undefined;
  }, 10_000, 20);
  expect(events[0]).toMatchObject({ type: 'task.status_changed', data: { status: 'in_progress', previousStatus: 'pending' } });
  expect(events.filter((e) => e.type === 'task.status_changed' && e.data.status === 'in_progress')).toHaveLength(1);
  expect(events.filter((e) => e.type === 'attempt.started')).toEqual([expect.objectContaining({ data: expect.objectContaining({ attemptId }) })]);
  await h.until(attemptId, ['completed'], 60_000);
}, 90_000);

test('a start refused while another attempt of its task has started: the task stays in progress and that is announced once', async () => {
  const p = await h.project();
  const taskId = await h.task(p.id, 'SLOWEDIT refused beside a running one');
  const seq0 = Number((await stack.db.query('SELECT max(seq) AS s FROM events')).rows[0].s);
  proxy.setMode('hold');
  let r: Awaited<ReturnType<typeof h.inject>>;
  let other: Awaited<ReturnType<typeof startNewAttempt>>;
  try {
    const refused = h.inject('POST', `/api/tasks/${taskId}/start`, { llm: 'scripted' });
    await eventually(async () => ((await attemptsOf(taskId)).length === 1 ? true : undefined), 10_000, 20); // its phase 1 moved the task
    // a second start, with a working way to Temporal, finds the task in progress already
    other = await startNewAttempt({ db: stack.db, config: stack.config, temporal: stack.temporal, metrics: stack.metrics }, taskId, { llm: 'scripted' });
    proxy.setMode('refuse');
    r = await refused;
  } finally {
    proxy.setMode('forward');
  }
  expect(r.statusCode).toBe(503);
  expect((await attemptsOf(taskId)).map((a) => a.id)).toEqual([other.attempt.id]);
  expect((await h.inject('GET', `/api/tasks/${taskId}`)).json().data.status).toBe('in_progress');
  const { rows } = await stack.db.query<{ data: Record<string, unknown> }>(
    "SELECT data FROM events WHERE seq > $1 AND data->>'taskId' = $2 AND type = 'task.status_changed' AND data->>'status' = 'in_progress'",
    [seq0, taskId],
  );
  expect(rows).toEqual([expect.objectContaining({ data: expect.objectContaining({ previousStatus: 'pending' }) })]);
  await h.until(other.attempt.id, ['completed'], 60_000);
}, 120_000);

test('a start without a key that Temporal refuses: 503, no attempt, the task exactly as before (phase 1 had moved it), no event', async () => {
  const p = await h.project();
  const taskId = await h.task(p.id, 'NOOP refused fast start');
  expect((await h.inject('PATCH', `/api/tasks/${taskId}`, { status: 'review' })).statusCode).toBe(200);
  const before = (await h.inject('GET', `/api/tasks/${taskId}`)).json().data;
  const seq0 = Number((await stack.db.query('SELECT max(seq) AS s FROM events')).rows[0].s);
  proxy.setMode('hold');
  let r: Awaited<ReturnType<typeof h.inject>>;
  try {
    const refused = h.inject('POST', `/api/tasks/${taskId}/start`, { llm: 'scripted' });
    await eventually(async () => ((await attemptsOf(taskId)).length === 1 ? true : undefined), 10_000, 20);
    expect((await h.inject('GET', `/api/tasks/${taskId}`)).json().data.status).toBe('in_progress'); // moved by phase 1
    proxy.setMode('refuse');
    r = await refused;
  } finally {
    proxy.setMode('forward');
  }
  expect(r.statusCode).toBe(503);
  expect(await attemptsOf(taskId)).toEqual([]);
  expect((await h.inject('GET', `/api/tasks/${taskId}`)).json().data).toEqual(before);
  expect((await stack.db.query("SELECT type FROM events WHERE seq > $1 AND data->>'taskId' = $2", [seq0, taskId])).rows).toEqual([]);
}, 60_000);

test('the answer does not wait for the confirmation: with the events table locked the start answers 200, and its events follow the unlock', async () => {
  const p = await h.project();
  const taskId = await h.task(p.id, 'NOOP answered before its events');
  const locker = await stack.db.connect();
  let attemptId = '';
  try {
    await locker.query('BEGIN');
    await locker.query('LOCK TABLE events IN EXCLUSIVE MODE'); // readers go on; no event can be written
    const r = await h.inject('POST', `/api/tasks/${taskId}/start`, { llm: 'scripted' });
    expect(r.statusCode).toBe(200);
    attemptId = r.json().data.attemptId as string;
    expect((await h.inject('GET', `/api/tasks/${taskId}`)).json().data.status).toBe('in_progress');
    expect((await attemptsOf(taskId))[0]?.start_pending_since).not.toBeNull(); // its confirmation waits for the lock
  } finally {
    await locker.query('COMMIT');
    locker.release();
  }
  await eventually(async () => ((await attemptsOf(taskId))[0]?.start_pending_since === null ? true : undefined), 10_000, 20);
  expect(await startedEvents(attemptId)).toBe(1);
  await h.until(attemptId, ['completed'], 60_000);
}, 90_000);

test("a new attempt whose workflow id Temporal closed before the start's request reached it: recorded cancelled with the line saying why, never left running; the next attempt of the task runs", async () => {
  const p = await h.project();
  const taskId = await h.task(p.id, 'NOOP closed before its start arrived');
  const counted = { started: await attemptsCounted('started'), cancelled: await attemptsCounted('cancelled') };
  proxy.setMode('hold');
  const answer = h.inject('POST', `/api/tasks/${taskId}/start`, { llm: 'scripted' });
  let attemptId = '';
  try {
    attemptId = (await eventually(async () => (await attemptsOf(taskId))[0], 10_000, 20)).id;
    // its id is run and terminated from Temporal's side first (as when an earlier send of this very start got through,
    // its answer lost, and an operator terminated the run before the SDK's retry of the call arrived)
    const direct = await stack.temporal.client();
    const other = await direct.workflow.start('attemptWorkflow', { workflowId: `attempt:${attemptId}`, taskQueue: `nobody-polls-${attemptId}`, args: [] });
    await other.terminate('closed before the start arrived');
  } finally {
    proxy.setMode('forward');
  }
  const r = await answer;
  expect(r.statusCode).toBe(200);
  expect(r.json().data).toMatchObject({ attemptId, status: 'cancelled' });
  const processId = r.json().data.processId as string;

  // no new run of the closed id, and the attempt is not `running`: cancelled, its task back to pending, the line says why
  const client = await stack.temporal.client();
  const runs: string[] = [];
  for await (const w of client.workflow.list({ query: `WorkflowId = 'attempt:${attemptId}'` })) runs.push(w.status.name);
  expect(runs).toEqual(['TERMINATED']);
  const row = (await stack.db.query('SELECT status, start_pending_since FROM attempts WHERE id = $1', [attemptId])).rows[0];
  expect(row).toEqual({ status: 'cancelled', start_pending_since: null });
  expect((await h.inject('GET', `/api/tasks/${taskId}`)).json().data.status).toBe('pending');
  expect((await h.inject('GET', `/api/processes/${processId}`)).json().data.status).toBe('cancelled');
  const logs = await h.logs(processId);
  expect(logs.filter((l) => l.message === 'the workflow was terminated in Temporal (reason: closed before the start arrived) while the attempt ran; the attempt is recorded cancelled')).toHaveLength(1);
  const events = (
    await stack.db.query<{ type: string }>(`SELECT type FROM events WHERE data->>'attemptId' = $1 AND type LIKE 'attempt.%' ORDER BY seq`, [attemptId])
  ).rows.map((e) => e.type);
  expect(events).toEqual(['attempt.started', 'attempt.cancelled']);
  // counted as the cancel it is, not as a start (until session 51 it was counted `started` and never `cancelled`)
  expect({ started: await attemptsCounted('started'), cancelled: await attemptsCounted('cancelled') }).toEqual({ started: counted.started, cancelled: counted.cancelled + 1 });
  // a reconciler pass changes nothing
  expect(await reconcilePendingStarts({ db: stack.db, config: stack.config, temporal: stack.temporal, metrics: stack.metrics }, 0)).toBe(0);
  expect((await stack.db.query('SELECT status FROM attempts WHERE id = $1', [attemptId])).rows[0].status).toBe('cancelled');

  // a new attempt of the task runs, and is counted started (by its confirmation, which follows the answer)
  const next = await h.start(taskId);
  expect(next.attemptId).not.toBe(attemptId);
  await eventually(async () => (await attemptsCounted('started')) === counted.started + 1, 10_000, 20);
  expect((await h.until(next.attemptId, ['completed'], 60_000)).status).toBe('completed');
}, 120_000);
