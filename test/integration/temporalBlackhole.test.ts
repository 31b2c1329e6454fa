/**
 * `armada api --service task` in front of a Temporal that hangs: a TCP proxy between the service and the real dev
 * server first breaks the open connections, then takes every new connection and never forwards or answers a byte
 * (a frozen host, a partition), and later passes new connections through again while the black-holed ones stay open
 * and silent. Starts answer 503 (the service's shape, Retry-After) meanwhile, the first one within the ~6 s
 * docs/operations.md gives for detection; once Temporal is reachable again a start is accepted (its workflow runs on
 * the server) and /health says ok, without a restart.
 *
 * Measured on the old code: the first start took the start deadline (20 s) for its 503, and after pass-through
 * /health kept answering {"status":"unavailable","down":["temporal"]} and starts 503: the probe and the client shared
 * one gRPC subchannel, whose connection attempt sat forever on the black-holed socket (grpc-js has no connect
 * timeout, and keepalive only runs on a connection that completed its HTTP/2 handshake), and nothing ever replaced it.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import crypto from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import { spawnApi, type ApiProcess } from '../support/apiProcess';
import { agentConfig } from '../support/attemptHelpers';
import { createTestDatabase, env, eventually, makeGitRepo } from '../support/harness';
import { startTcpProxy, type TcpProxy } from '../support/tcpProxy';
import { timedRequest, type TimedAnswer as Answer } from '../support/timedRequest';

jest.setTimeout(300_000);

let home: string;
let db: Awaited<ReturnType<typeof createTestDatabase>>;
let proxy: TcpProxy;
let api: ApiProcess;
const taskQueue = `blackhole-${crypto.randomBytes(4).toString('hex')}`;
const workflowIds: string[] = [];

beforeAll(async () => {
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-blackhole-'));
  fs.writeFileSync(path.join(home, 'config.json'), JSON.stringify(agentConfig()));
  db = await createTestDatabase();
  proxy = await startTcpProxy(env('ARMADA_TEST_TEMPORAL_ADDRESS'));
  api = await spawnApi({
    home,
    databaseUrl: db.url,
    temporalAddress: proxy.address,
    services: ['task'],
    configPath: path.join(home, 'config.json'),
    env: { ARMADA_TASK_QUEUE: taskQueue },
  });
});

afterAll(async () => {
  await api?.stop();
  await proxy?.close();
  // the accepted starts' workflows have no worker on this queue: end them
  if (workflowIds.length) {
    const connection = await Connection.connect({ address: env('ARMADA_TEST_TEMPORAL_ADDRESS') });
    const client = new Client({ connection });
    for (const id of workflowIds) await client.workflow.getHandle(id).terminate('test over').catch(() => undefined);
    await connection.close();
  }
  await db?.drop();
  if (home) fs.rmSync(home, { recursive: true, force: true });
});

const send = (method: 'GET' | 'POST', url: string, payload?: unknown): Promise<Answer> => timedRequest(`${api.base('task')}${url}`, { method, payload, timeoutMs: 60_000 });

async function newTask(projectId: string, title: string): Promise<string> {
  const r = await send('POST', '/api/tasks', { projectId, title });
  expect(r.status).toBe(201);
  return (r.body.data as { id: string }).id;
}

const temporalDown = (a: Answer) => a.status === 503 && JSON.stringify((a.body as { down?: unknown }).down) === '["temporal"]';

test('a black-holed Temporal: starts answer 503 with Retry-After, and once it passes through again starts run and /health is ok, without a restart', async () => {
  const p = await send('POST', '/api/projects', { name: 'Blackhole', repository: { url: makeGitRepo() } });
  expect(p.status).toBe(201);
  const projectId = (p.body.data as { id: string }).id;

  // Temporal answers through the proxy: a start runs
  const before = await send('POST', `/api/tasks/${await newTask(projectId, 'before the black hole')}/start`, { llm: 'scripted' });
  expect(before.status).toBe(200);
  workflowIds.push(`attempt:${(before.body.data as { attemptId: string }).attemptId}`);
  expect((await send('GET', '/health')).status).toBe(200);

  proxy.reset(); // as the tester did: the current connections break, then every new one is black-holed
  proxy.setMode('blackhole');
  const during: Answer[] = [];
  const blackholed = Date.now();
  while (Date.now() - blackholed < 20_000) {
    during.push(await send('POST', `/api/tasks/${await newTask(projectId, `during the black hole ${during.length}`)}/start`, { llm: 'scripted' }));
    await new Promise((r) => setTimeout(r, 500));
  }
  for (const a of during) {
    expect(a.status).toBe(503);
    expect(a.retryAfter).toBe('1');
    expect(a.body).toMatchObject({ success: false, error: { code: 'SERVICE_UNAVAILABLE', message: expect.stringMatching(/unavailable/) } });
  }
  expect(temporalDown(await send('GET', '/health'))).toBe(true);
  expect(proxy.openConnections()).toBeGreaterThan(0); // the black-holed sockets are still open, silent

  proxy.setMode('forward');
  const resumed = Date.now();
  const healthy = await eventually(async () => {
    const h = await send('GET', '/health');
    return h.status === 200 ? h : undefined;
  }, 30_000, 250).catch(() => undefined);
  expect({ healthyWithin30s: !!healthy, apiOutput: healthy ? '' : api.output() }).toEqual({ healthyWithin30s: true, apiOutput: '' });
  expect(healthy?.body).toMatchObject({ status: 'ok' });

  const taskId = await newTask(projectId, 'after the black hole');
  const after = await eventually(async () => {
    const a = await send('POST', `/api/tasks/${taskId}/start`, { llm: 'scripted' });
    return a.status === 200 ? a : undefined;
  }, Math.max(1000, 30_000 - (Date.now() - resumed)), 500);
  const attemptId = (after.body.data as { attemptId: string }).attemptId;
  workflowIds.push(`attempt:${attemptId}`);
  // the workflow exists on the server
  const connection = await Connection.connect({ address: env('ARMADA_TEST_TEMPORAL_ADDRESS') });
  try {
    const d = await new Client({ connection }).workflow.getHandle(`attempt:${attemptId}`).describe();
    expect(d.status.name).toBe('RUNNING');
    expect(d.taskQueue).toBe(taskQueue);
  } finally {
    await connection.close();
  }
  // the first start waited until Temporal was known down (about 6 s, docs/operations.md), not the start's 20 s
  // deadline; the later ones were answered at once
  expect(during[0]?.ms).toBeLessThan(12_000);
  expect(during.slice(1).map((a) => a.ms).filter((ms) => ms >= 2000)).toEqual([]);
});
