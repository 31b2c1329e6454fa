/**
 * An approval whose expiry passes while Temporal is away (docs/approvals.md, "Expiry"). The test owns its Temporal
 * dev server (the runtime code of `armada start`, lib/runtime/temporalDevServer.ts) and runs `armada api --service
 * task` and `armada worker` as processes of their own against it. It freezes the server (SIGSTOP: a hung host,
 * connections taken and never answered) or kills it (SIGKILL, then a restart on the same SQLite file) across the
 * expiry instant, and in the last case kills the worker instead. Afterwards the approval is `expired`, once (one
 * approval.expired event, one webhook delivery of it, nothing approved); a response sent while Temporal was away got
 * a 503 without recording anything; one sent after the expiry gets the documented 409 CONFLICT.
 *
 * Before: after the restart of a killed Temporal the API answered again before the worker had run the expiry timer,
 * and a response sent then approved the request, seconds after its expiry (the timer's firing and the response came
 * in one workflow task, whose updates are handled first); with every worker away a response sent after the expiry
 * waited for a worker and then approved it too, and one sent before it approved it although no worker ran before it.
 * (Over a minute: the file starts a dev server and two armada processes and waits across three real expiries.)
 */
import type { ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import type { RunningDevServer } from '../../lib/runtime/temporalDevServer';
import { spawnArmada } from '../support/armadaProcess';
import { createTestDatabase, eventually, makeGitRepo } from '../support/harness';
import { startOwnTemporal, stopChild } from '../support/ownTemporal';

const { freePort } = require('../support/ports') as { freePort(): Promise<number> };

jest.setTimeout(300_000);

const APPROVER = 'alice@example.com';

let home: string;
let dev: RunningDevServer;
let db: Awaited<ReturnType<typeof createTestDatabase>>;
let base: string;
let client: Client;
let connection: Connection;
const children: ChildProcess[] = [];
let frozen = 0;
const deliveries: { event: string; delivery: string }[] = [];
let receiver: http.Server;
let env: NodeJS.ProcessEnv;

beforeAll(async () => {
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-approval-outage-'));
  // the last case sends a response while no worker runs and has it handled by the worker started after the expiry,
  // however long that start takes: the response waits for it (docs/approvals.md#no-worker; its own test is
  // approvalNoWorker.test.ts)
  fs.writeFileSync(path.join(home, 'config.json'), JSON.stringify({ approvals: { workerWaitMs: 300_000 } }));
  dev = await startOwnTemporal(home);
  db = await createTestDatabase();
  receiver = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      deliveries.push({ event: String(req.headers['x-armada-event']), delivery: String(req.headers['x-armada-delivery']) });
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  env = {
    ...process.env,
    ARMADA_HOME: home,
    ARMADA_CONFIG: path.join(home, 'config.json'),
    DATABASE_URL: db.url,
    TEMPORAL_ADDRESS: dev.address,
    ARMADA_TASK_QUEUE: `approval-outage-${crypto.randomBytes(4).toString('hex')}`,
    ARMADA_TASK_PORT: String(port),
    ARMADA_LOG_LEVEL: 'warn',
    ARMADA_LOG_FORMAT: 'json',
    ARMADA_TEMPORAL_METRICS_PORT: '',
  };
  const [api, worker] = await Promise.all([spawnArmada(['api', '--service', 'task'], 'listening', env, 180_000), spawnArmada(['worker'], 'worker-started', env, 180_000)]);
  children.push(api.child, worker.child);
  connection = await Connection.connect({ address: dev.address });
  client = new Client({ connection });
}, 300_000);

afterAll(async () => {
  if (frozen) process.kill(frozen, 'SIGCONT');
  for (const c of children) await stopChild(c);
  await connection?.close();
  await dev?.stop();
  await new Promise((r) => receiver?.close(r));
  await db?.drop();
  if (home) fs.rmSync(home, { recursive: true, force: true });
});

interface Answer {
  status: number;
  ms: number;
  retryAfter: string | null;
  body: { success?: boolean; data?: Record<string, unknown>; error?: { code: string; message: string; details?: unknown } };
}

async function send(method: 'GET' | 'POST', url: string, payload?: unknown, user?: string, timeoutMs = 120_000): Promise<Answer> {
  const t0 = Date.now();
  const headers: Record<string, string> = {};
  if (payload !== undefined) headers['content-type'] = 'application/json';
  if (user) headers['x-user-email'] = user;
  const r = await fetch(`${base}${url}`, { method, headers, body: payload === undefined ? undefined : JSON.stringify(payload), signal: AbortSignal.timeout(timeoutMs) });
  const text = await r.text();
  return { status: r.status, ms: Date.now() - t0, retryAfter: r.headers.get('retry-after'), body: text ? JSON.parse(text) : {} };
}

const respond = (id: string, timeoutMs?: number) => send('POST', `/api/approvals/${id}/respond`, { decision: 'approved', comment: 'ship it' }, APPROVER, timeoutMs);
const temporalDown = async () => {
  const h = await send('GET', '/health');
  return h.status === 503 && JSON.stringify((h.body as { down?: unknown }).down) === '["temporal"]';
};

let attemptSeq = 0;
/** An approval of a fresh attempt (its row inserted as the attempt engine would), expiring in `inMs`. */
async function createApproval(inMs: number): Promise<{ id: string; expiresAt: string }> {
  const p = await send('POST', '/api/projects', { name: `P-${crypto.randomBytes(4).toString('hex')}`, repository: { url: makeGitRepo() } });
  expect(p.status).toBe(201);
  const t = await send('POST', '/api/tasks', { projectId: p.body.data?.id, title: 'Task with a gate' });
  expect(t.status).toBe(201);
  const attemptId = crypto.randomUUID();
  await db.pool.query("INSERT INTO attempts (id, task_id, number, llm, status, started_at) VALUES ($1, $2, $3, 'test', 'running', now())", [attemptId, t.body.data?.id, ++attemptSeq]);
  const a = await send('POST', '/api/approvals', { taskAttemptId: attemptId, type: 'merge', title: 'Merge it?', approvers: [APPROVER], expiresAt: new Date(Date.now() + inMs).toISOString() }, 'carol@example.com');
  expect(a.status).toBe(201);
  const id = a.body.data?.id as string;
  // its workflow has armed the expiry timer
  await eventually(async () => (await client.workflow.getHandle(`approval:${id}`).fetchHistory()).events?.some((e) => e.timerStartedEventAttributes), 30_000, 200);
  return { id, expiresAt: a.body.data?.expiresAt as string };
}

/** What the approval ended as, once it is no longer pending, with everything that records it. */
async function outcome(id: string) {
  const detail = await eventually(async () => {
    const d = await send('GET', `/api/approvals/${id}`);
    return d.status === 200 && d.body.data?.status !== 'pending' ? d.body.data : undefined;
  }, 120_000, 250);
  const result = await client.workflow.getHandle(`approval:${id}`).result();
  const events = (await db.pool.query<{ type: string }>("SELECT type FROM events WHERE type LIKE 'approval.%' AND data->>'approvalId' = $1 ORDER BY seq", [id])).rows.map((r) => r.type);
  const responses = (await db.pool.query('SELECT approver FROM approval_responses WHERE approval_id = $1', [id])).rows;
  return { detail, result, events, responses };
}

async function webhookDeliveries(id: string): Promise<{ event: string; delivery: string }[]> {
  const { rows } = await db.pool.query<{ seq: string }>("SELECT seq FROM events WHERE type LIKE 'approval.%' AND data->>'approvalId' = $1", [id]);
  const seqs = new Set(rows.map((r) => r.seq));
  return deliveries.filter((d) => seqs.has(d.delivery.split(':')[2] as string));
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

test('setup: a webhook for the approval events', async () => {
  const w = await send('POST', '/api/webhooks', { url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`, events: ['approval.approved', 'approval.rejected', 'approval.expired'], secret: 's3cret' });
  expect(w.status).toBe(201);
});

test('Temporal frozen (SIGSTOP) across the expiry: expired once, responses meanwhile 503 and not recorded, afterwards 409', async () => {
  const { id, expiresAt } = await createApproval(15_000);
  frozen = dev.server().pid;
  process.kill(frozen, 'SIGSTOP');
  // sent before the API knows: it waits on a connection that went silent
  const inFlight = respond(id);
  await eventually(temporalDown, 30_000, 250);
  const during = await respond(id);
  await sleep(Math.max(0, Date.parse(expiresAt) - Date.now()) + 3000);
  const first = await inFlight;
  process.kill(frozen, 'SIGCONT');
  frozen = 0;
  // after the expiry, once Temporal answers again: the documented conflict, never an approval
  const after = await eventually(async () => {
    const a = await respond(id);
    return a.status === 503 ? undefined : a;
  }, 60_000, 250);
  const o = await outcome(id);
  const hooks = await eventually(async () => {
    const d = await webhookDeliveries(id);
    return d.length ? d : undefined;
  }, 60_000, 250);
  await sleep(2000); // a second delivery would come meanwhile
  expect(first.status).toBe(503);
  expect(during).toMatchObject({ status: 503, retryAfter: '1', body: { success: false, error: { code: 'SERVICE_UNAVAILABLE' } } });
  expect(during.ms).toBeLessThan(10_000);
  expect(after).toMatchObject({ status: 409, body: { success: false, error: { code: 'CONFLICT' } } });
  expect(after.body.error?.message).toMatch(/expired/);
  expect(o.detail).toMatchObject({ status: 'expired', responses: [] });
  expect(o.result).toBe('expired');
  expect(o.events).toEqual(['approval.created', 'approval.expired']);
  expect(o.responses).toEqual([]);
  expect(hooks.length).toBeGreaterThan(0);
  expect(new Set((await webhookDeliveries(id)).map((d) => `${d.event} ${d.delivery}`))).toEqual(new Set([`approval.expired ${hooks[0]?.delivery}`]));
});

test('Temporal killed (SIGKILL) across the expiry and started again: expired once, responses meanwhile 503, afterwards 409', async () => {
  const { id, expiresAt } = await createApproval(12_000);
  process.kill(dev.server().pid, 'SIGKILL');
  await dev.server().exited;
  const during = await respond(id);
  await eventually(temporalDown, 30_000, 250);
  const known = await respond(id);
  await sleep(Math.max(0, Date.parse(expiresAt) - Date.now()) + 2000);
  await dev.restart();
  // the first answer that is not a 503: the documented conflict, never an approval
  const after = await eventually(async () => {
    const a = await respond(id);
    return a.status === 503 ? undefined : a;
  }, 60_000, 100);
  const o = await outcome(id);
  const hooks = await eventually(async () => {
    const d = await webhookDeliveries(id);
    return d.length ? d : undefined;
  }, 60_000, 250);
  await sleep(2000);
  for (const a of [during, known]) expect(a).toMatchObject({ status: 503, retryAfter: '1', body: { success: false, error: { code: 'SERVICE_UNAVAILABLE' } } });
  expect(known.ms).toBeLessThan(10_000);
  expect(after).toMatchObject({ status: 409, body: { success: false, error: { code: 'CONFLICT', message: expect.stringMatching(/expired/) } } });
  expect(o.detail).toMatchObject({ status: 'expired', responses: [] });
  expect(o.result).toBe('expired');
  expect(o.events).toEqual(['approval.created', 'approval.expired']);
  expect(new Set((await webhookDeliveries(id)).map((d) => `${d.event} ${d.delivery}`))).toEqual(new Set([`approval.expired ${hooks[0]?.delivery}`]));
});

test('every worker away across the expiry: a response sent after it is a 409 at once; one sent just before it, handled only after it, a 409 too; both expired once', async () => {
  const late = await createApproval(10_000);
  const early = await createApproval(10_000);
  const worker = children[1] as ChildProcess;
  worker.kill('SIGKILL');
  await new Promise((r) => worker.once('exit', r));
  // before the expiry: the request is pending, so the response goes to its workflow, where it waits for a worker
  await sleep(Math.max(0, Date.parse(early.expiresAt) - Date.now() - 2000));
  const beforeExpiry = respond(early.id);
  await sleep(Math.max(0, Date.parse(late.expiresAt) - Date.now()) + 2000);
  // after the expiry: nobody has marked it expired yet (no worker), but it is no longer open to responses
  const afterExpiry = await respond(late.id, 20_000);
  const w = await spawnArmada(['worker'], 'worker-started', env, 180_000);
  children[1] = w.child;
  const handledLate = await beforeExpiry;
  const outcomes = [await outcome(late.id), await outcome(early.id)];
  expect(afterExpiry).toMatchObject({ status: 409, body: { success: false, error: { code: 'CONFLICT', message: expect.stringMatching(/expired/) } } });
  expect(afterExpiry.ms).toBeLessThan(10_000);
  expect(handledLate).toMatchObject({ status: 409, body: { success: false, error: { code: 'CONFLICT', message: expect.stringMatching(/expired/) } } });
  for (const o of outcomes) {
    expect(o.detail).toMatchObject({ status: 'expired', responses: [] });
    expect(o.result).toBe('expired');
    expect(o.events).toEqual(['approval.created', 'approval.expired']);
  }
  for (const a of [late, early]) {
    const hooks = await eventually(async () => {
      const d = await webhookDeliveries(a.id);
      return d.length ? d : undefined;
    }, 60_000, 250);
    expect(hooks.map((d) => d.event)).toEqual(['approval.expired']);
  }
});
