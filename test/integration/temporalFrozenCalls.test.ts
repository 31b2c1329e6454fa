/**
 * A Temporal that freezes under calls already sent (the chaos soak's `temporal-freeze`: SIGSTOP of the dev server; here
 * a TCP proxy that goes silent on the open connections and on new ones, which is what a stopped process looks like
 * on the wire): a start sent on the working connection just before the freeze answers 503 once Temporal is known
 * down (about 6 s, docs/operations.md), not at its 20 s deadline; and once Temporal answers again starts run.
 *
 * Before: the probes called Temporal down after ~6 s and the service gave up its connection, but a call already sent
 * on it waited for its deadline (a start's 20 s, the scheduler's and the agents' 10 s), so requests sent in the
 * first seconds of a freeze took 20 s for their 503.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { insertAttempt } from '../../lib/db/attempts';
import { spawnApi, type ApiProcess } from '../support/apiProcess';
import { agentConfig } from '../support/attemptHelpers';
import { ctrlCWithin, startArmada, type RunningArmada } from '../support/armadaStart';
import { createTestDatabase, env, eventually, makeGitRepo } from '../support/harness';
import { startTcpProxy, type TcpProxy } from '../support/tcpProxy';
import { timedRequest, type TimedAnswer as Answer } from '../support/timedRequest';
import { startUnansweringTemporal } from '../support/unansweringTemporal';

jest.setTimeout(240_000);

let home: string;
let db: Awaited<ReturnType<typeof createTestDatabase>>;
let proxy: TcpProxy;
let api: ApiProcess;
const taskQueue = `frozen-${crypto.randomBytes(4).toString('hex')}`;
const workflowIds: string[] = [];

beforeAll(async () => {
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-frozen-calls-'));
  fs.writeFileSync(path.join(home, 'config.json'), JSON.stringify(agentConfig()));
  db = await createTestDatabase();
  proxy = await startTcpProxy(env('ARMADA_TEST_TEMPORAL_ADDRESS'));
  api = await spawnApi({ home, databaseUrl: db.url, temporalAddress: proxy.address, services: ['task'], configPath: path.join(home, 'config.json'), env: { ARMADA_TASK_QUEUE: taskQueue } });
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

test('a start sent on the connection as Temporal freezes answers 503 once Temporal is known down, not at its deadline; nothing of it stays', async () => {
  const p = await send('POST', '/api/projects', { name: 'Frozen', repository: { url: makeGitRepo() } });
  expect(p.status).toBe(201);
  const projectId = (p.body.data as { id: string }).id;
  // the connection is up and working
  const before = await send('POST', `/api/tasks/${await newTask(projectId, 'before the freeze')}/start`, { llm: 'scripted' });
  expect(before.status).toBe(200);
  workflowIds.push(`attempt:${(before.body.data as { attemptId: string }).attemptId}`);

  const frozenTask = await newTask(projectId, 'sent as it froze');
  proxy.setMode('blackhole'); // the open connections go silent, and new ones are taken and never answered
  const during = await send('POST', `/api/tasks/${frozenTask}/start`, { llm: 'scripted' });
  expect(during.status).toBe(503);
  expect(during.retryAfter).toBe('1');
  expect(during.body).toMatchObject({ success: false, error: { code: 'SERVICE_UNAVAILABLE' } });
  // Temporal is called down about 6 s into the silence (docs/operations.md); the old code took 13.3 s here (the
  // connection's keepalive), up to the start's 20 s deadline
  expect({ ms: during.ms, within9s: during.ms < 9000 }).toMatchObject({ within9s: true });
  // a 503 start created nothing: the task has no attempt
  const attempts = await send('GET', `/api/tasks/${frozenTask}/attempts`);
  expect(attempts.status).toBe(200);
  expect(attempts.body.data).toEqual([]);

  proxy.setMode('forward');
  const thawed = Date.now();
  const taskId = await newTask(projectId, 'after the freeze');
  const after = await eventually(async () => {
    const a = await send('POST', `/api/tasks/${taskId}/start`, { llm: 'scripted' });
    return a.status === 200 ? a : undefined;
  }, 30_000, 500);
  workflowIds.push(`attempt:${(after.body.data as { attemptId: string }).attemptId}`);
  expect(Date.now() - thawed).toBeLessThan(30_000);
});

test('a merge waiting for its result when Temporal freezes: 503 saying the outcome is unknown (the merge was started and may land), not "try again"', async () => {
  const p = await send('POST', '/api/projects', { name: 'Frozen merge', repository: { url: makeGitRepo() } });
  expect(p.status).toBe(201);
  const taskId = await newTask((p.body.data as { id: string }).id, 'merged as it froze');
  // a finished attempt with a branch; no worker serves this file's queue, so the merge workflow starts and waits
  const attemptId = crypto.randomUUID();
  await insertAttempt(db.pool, { id: attemptId, taskId, llm: 'scripted', model: null, status: 'created', branchPrefix: 'armada', baseBranch: 'main', options: {}, description: '' });
  await db.pool.query("UPDATE attempts SET status = 'completed', host_queue = 'nobody' WHERE id = $1", [attemptId]);
  workflowIds.push(`merge:${attemptId}`);
  // Temporal answers again after the first test: the start goes through
  await eventually(async () => (await send('GET', '/health')).status === 200, 30_000, 250);
  const merge = send('POST', `/api/attempts/${attemptId}/merge`, { strategy: 'ff' });
  await new Promise((r) => setTimeout(r, 2000)); // started, waiting for its result
  proxy.setMode('blackhole');
  const answer = await merge;
  proxy.setMode('forward');
  expect(answer.status).toBe(503);
  expect(answer.body).toMatchObject({ success: false, error: { code: 'SERVICE_UNAVAILABLE', message: expect.stringMatching(/may or may not have been applied/), details: { outcome: 'unknown' } } });
  // it was started: the workflow is on the server
  const connection = await Connection.connect({ address: env('ARMADA_TEST_TEMPORAL_ADDRESS') });
  try {
    expect((await new Client({ connection }).workflow.getHandle(`merge:${attemptId}`).describe()).status.name).toBe('RUNNING');
  } finally {
    await connection.close();
  }
});

test('armada api started on a Temporal that takes the connection and then answers nothing (frozen right after the connect): it listens and serves what needs no Temporal', async () => {
  const silent = await startUnansweringTemporal(); // answers GetSystemInfo, the connect's call, and no other
  let late: ApiProcess | undefined;
  let limit: NodeJS.Timeout | undefined;
  try {
    const t0 = Date.now();
    // before: the start's search attribute check waited for its answer without a limit, and the process never listened
    late = await Promise.race([
      spawnApi({ home: fs.mkdtempSync(path.join(home, 'late-')), databaseUrl: db.url, temporalAddress: silent.address, services: ['task'] }),
      new Promise<never>((_, reject) => (limit = setTimeout(() => reject(new Error('armada api did not listen within 45 s')), 45_000))),
    ]);
    expect(Date.now() - t0).toBeLessThan(45_000);
    expect((await timedRequest(`${late.base('task')}/api/projects`, { method: 'GET', timeoutMs: 10_000 })).status).toBe(200);
  } finally {
    clearTimeout(limit);
    await late?.stop();
    await silent.close();
  }
});

test('armada start on an external Temporal that takes the connection and answers nothing: it listens and serves what needs no Temporal, says what is wrong and what to check, and its workers poll once Temporal answers', async () => {
  const silent = await startUnansweringTemporal(); // answers GetSystemInfo, the connect's call, and no other
  const port = Number(silent.address.slice(silent.address.lastIndexOf(':') + 1));
  const queue = `frozen-start-${crypto.randomBytes(4).toString('hex')}`;
  const startHome = fs.mkdtempSync(path.join(home, 'start-'));
  fs.writeFileSync(path.join(startHome, 'config.json'), JSON.stringify(agentConfig()));
  let armada: RunningArmada | undefined;
  let relay: net.Server | undefined;
  let limit: NodeJS.Timeout | undefined;
  try {
    const t0 = Date.now();
    // before: the workers' search attribute check waited for its answer without a limit, and the services (started
    // after the workers) never listened
    const starting = startArmada(startHome, { DATABASE_URL: db.url, TEMPORAL_ADDRESS: silent.address, ARMADA_CONFIG: path.join(startHome, 'config.json'), ARMADA_TASK_QUEUE: queue, ARMADA_LOG_LEVEL: 'info' });
    armada = await Promise.race([starting, new Promise<never>((_, reject) => (limit = setTimeout(() => reject(new Error('armada start did not listen within 45 s')), 45_000)))]);
    clearTimeout(limit);
    expect(Date.now() - t0).toBeLessThan(45_000);
    const base = `http://127.0.0.1:${armada.ports.task}`;
    expect((await timedRequest(`${base}/api/projects`, { method: 'GET', timeoutMs: 10_000 })).status).toBe(200);
    expect(armada.output()).toContain(`Temporal at ${silent.address} took the connection but did not answer the search attribute check`);

    // Temporal answers from now on (the same address now reaches the real server): the workers start polling
    await silent.close();
    relay = net.createServer((c) => {
      const up = net.connect(Number(env('ARMADA_TEST_TEMPORAL_ADDRESS').split(':')[1]), env('ARMADA_TEST_TEMPORAL_ADDRESS').split(':')[0]);
      c.pipe(up).pipe(c);
      c.on('error', () => up.destroy());
      up.on('error', () => c.destroy());
    });
    await new Promise<void>((r) => relay?.listen(port, '127.0.0.1', () => r()));
    const connection = await Connection.connect({ address: env('ARMADA_TEST_TEMPORAL_ADDRESS') });
    try {
      await eventually(
        async () => {
          const q = await connection.workflowService.describeTaskQueue({ namespace: 'default', taskQueue: { name: queue }, taskQueueType: 1 });
          return (q.pollers ?? []).length > 0;
        },
        40_000,
        500,
      );
    } finally {
      await connection.close();
    }
    expect(armada.output()).toContain('Temporal answered the search attribute check; the workers start polling');
  } finally {
    clearTimeout(limit);
    if (armada) await ctrlCWithin(armada, startHome, 30_000);
    await silent.close().catch(() => undefined);
    await new Promise((r) => (relay ? relay.close(r) : r(undefined)));
  }
});
