/**
 * An assignment lost mid-request: its row is committed in PostgreSQL but the API replica died before the `assign`
 * signal went out. A running agents service finds and delivers it by itself within seconds (before: only a service
 * start sent it again), and an assignment runs once however many deliveries race:
 * - a row written exactly as the dying request left it is delivered and completes, with no restart;
 * - two replicas reconciling at once send each lost assignment's signal once;
 * - an original request that was only slow (its signal held until it times out, after the service had delivered the
 *   task) answers 201, not 503 with a `failed` row whose process ran anyway; its signal, landing late, runs nothing.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { defaultPayloadConverter } from '@temporalio/common';
import type { FastifyInstance } from 'fastify';
import { AgentActors } from '../../api/agents/agentActors';
import { buildService } from '../../api/services';
import type { ArmadaConfig } from '../../lib/config';
import { insertAgentTask } from '../../lib/db/agentTasks';
import { createTemporalHandle } from '../../lib/temporal/client';
import { closeAgentsStack } from '../support/agentsTeardown';
import { TEST_API_KEY, env, eventually, logger, startTestStack, type TestStack } from '../support/harness';
import { startTcpProxy } from '../support/tcpProxy';

const FIXTURES = path.join(__dirname, '..', 'fixtures');
const suffix = crypto.randomBytes(3).toString('hex');
// Workflow ids (agent:<name>) are global to the Temporal namespace: a name of our own.
const AGENT = `courier-${suffix}`;
const pidDir = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-agent-pids-'));
const runLog = path.join(pidDir, 'runs.log');

let stack: TestStack;

beforeAll(async () => {
  stack = await startTestStack({
    services: ['agents'],
    worker: true,
    file: {
      agents: { scripted: { command: [process.execPath, path.join(FIXTURES, 'scriptedAgent.js')], env: { RUN_LOG: runLog } } },
      multiAgent: { agents: [{ name: AGENT, llm: 'scripted' }], actorCheckIntervalMs: 500 },
    },
  });
});
afterAll(() => closeAgentsStack(stack, { agents: [AGENT], groups: [], pidDir }));

const call = (app: FastifyInstance, method: 'GET' | 'POST', url: string, payload?: unknown) =>
  app.inject({ method, url, payload: payload as object, headers: { 'x-api-key': TEST_API_KEY } });

async function finished(app: FastifyInstance, id: string, timeoutMs = 30_000) {
  return eventually(async () => {
    const t = (await call(app, 'GET', `/api/v1/tasks/${id}`)).json();
    return t.status === 'completed' || t.status === 'failed' ? t : undefined;
  }, timeoutMs);
}

/** How many times the agent's process ran for the task (the scripted agent appends its task id to RUN_LOG). */
const runs = (id: string): number => (fs.existsSync(runLog) ? fs.readFileSync(runLog, 'utf8').split('\n').filter((l) => l === id).length : 0);

async function actorHistoryEvents() {
  const client = await stack.temporal.client();
  const history = await client.workflow.getHandle(`agent:${AGENT}`).fetchHistory();
  return history.events ?? [];
}

/** How many `assign` signals for the task reached the actor. */
async function assignSignals(id: string): Promise<number> {
  let n = 0;
  for (const e of await actorHistoryEvents()) {
    const a = e.workflowExecutionSignaledEventAttributes;
    if (a?.signalName !== 'assign') continue;
    const [input] = (a.input?.payloads ?? []).map((p) => defaultPayloadConverter.fromPayload<{ taskId: string }>(p));
    if (input?.taskId === id) n++;
  }
  return n;
}

/** How many child workflows the actor ran for the task (a delivery after the task finished starts one that skips it). */
async function childRuns(id: string): Promise<number> {
  return (await actorHistoryEvents()).filter((e) => e.childWorkflowExecutionCompletedEventAttributes?.workflowExecution?.workflowId === `agent-task:${id}`).length;
}

async function expectActive(app: FastifyInstance): Promise<void> {
  await eventually(async () => (await call(app, 'GET', `/api/v1/agents/${AGENT}/status`)).json().status === 'active', 30_000);
}

test('a row committed without its signal (the request died) is delivered by the running service within seconds and runs once', async () => {
  const app = stack.app('agents');
  await expectActive(app);
  // what POST /tasks leaves when its replica dies between the insert and the signal
  const row = await insertAgentTask(stack.db, { id: `lost-${suffix}`, agent: AGENT, task: 'sleep:10 lost by a dying request', priority: 'normal' });

  const done = await finished(app, row.id);
  expect(done).toMatchObject({ status: 'completed', error: null, result: expect.stringMatching(/done: sleep:10 lost by a dying request$/) });
  expect(runs(row.id)).toBe(1);
  expect(await assignSignals(row.id)).toBe(1);
}, 90_000);

test('two replicas reconciling at once: each lost assignment is sent once and runs once', async () => {
  // a second replica, started now (no lost row yet), checking every 500 ms like the first
  const replica = await buildService('agents', { db: stack.db, config: stack.config, keys: stack.keys, temporal: stack.temporal, logger, metrics: stack.metrics });
  try {
    await replica.ready();
    await expectActive(replica);
    const ids = ['high', 'normal', 'low', 'normal', 'high', 'low'].map((_, i) => `lost-${suffix}-${i}`);
    await Promise.all(
      ids.map((id, i) => insertAgentTask(stack.db, { id, agent: AGENT, task: `sleep:10 lost ${i}`, priority: (['high', 'normal', 'low'] as const)[i % 3] })),
    );

    for (const id of ids) expect(await finished(replica, id, 60_000)).toMatchObject({ status: 'completed', error: null });
    for (const id of ids) {
      expect(runs(id)).toBe(1);
      expect(await assignSignals(id)).toBe(1);
      expect(await childRuns(id)).toBe(1);
    }
  } finally {
    await replica.close();
  }
}, 120_000);

test('the original request was only slow: its signal times out after the service delivered the task, so it answers 201, and its late signal runs nothing', async () => {
  const app = stack.app('agents');
  // a replica whose Temporal holds every byte for a while; its own check does not run during the test
  const proxy = await startTcpProxy(env('ARMADA_TEST_TEMPORAL_ADDRESS'));
  const proxied = createTemporalHandle(proxy.address, stack.config.temporal.namespace);
  const config: ArmadaConfig = { ...stack.config, file: { ...stack.config.file, multiAgent: { agents: [{ name: AGENT, llm: 'scripted' }], actorCheckIntervalMs: 600_000 } } };
  const slow = await buildService('agents', { db: stack.db, config, keys: stack.keys, temporal: proxied, logger, metrics: stack.metrics });
  try {
    await slow.ready();
    await expectActive(slow);
    proxy.setMode('hold');
    const res = await call(slow, 'POST', '/api/v1/tasks', { agent: AGENT, task: 'sleep:10 slow request' });
    proxy.setMode('forward');

    // the running service delivered it while the request waited: the request does not fail a task that runs
    expect(res.statusCode).toBe(201);
    const id: string = res.json().taskId;
    expect(res.json().status).not.toBe('failed');
    const done = await finished(app, id);
    expect(done).toMatchObject({ status: 'completed', error: null, result: expect.stringMatching(/done: sleep:10 slow request$/) });

    // the request's signal, had it landed only now (sent here again to be sure it does): skipped, the process not run
    await new AgentActors(stack.temporal, stack.db, stack.config, logger).assign(AGENT, id, 'normal');
    await eventually(async () => (await childRuns(id)) >= 2, 30_000);
    expect(runs(id)).toBe(1);
    expect((await call(app, 'GET', `/api/v1/tasks/${id}`)).json()).toEqual(done);
  } finally {
    proxy.setMode('forward');
    await slow.close();
    await proxied.close();
    await proxy.close();
  }
}, 120_000);
