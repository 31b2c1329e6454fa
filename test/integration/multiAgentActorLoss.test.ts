/**
 * An agent's actor terminated by hand (`temporal workflow terminate`, or a client's terminate()) while it runs a task
 * and holds another: the service fails both tasks with the termination's reason, without an API restart. Before, they
 * stayed `running` / `assigned` until the API process restarted (and then ran again). Two ways it is noticed:
 * - the actor check of the service (every `actorCheckIntervalMs`, default 3 s), with no request at all;
 * - the next assignment, which finds no running actor and fails the old actor's tasks before it starts a new one.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { buildService } from '../../api/services';
import type { ArmadaConfig } from '../../lib/config';
import { groupAlive } from '../../lib/process/processGroup';
import { closeAgentsStack } from '../support/agentsTeardown';
import { TEST_API_KEY, eventually, logger, startTestStack, type TestStack } from '../support/harness';

const FIXTURES = path.join(__dirname, '..', 'fixtures');
// Workflow ids (agent:<name>) are global to the Temporal namespace: a name of our own.
const AGENT = `terminated-${crypto.randomBytes(3).toString('hex')}`;
const pidDir = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-agent-pids-'));
const groups: number[] = [];

let stack: TestStack;

beforeAll(async () => {
  stack = await startTestStack({
    services: ['agents'],
    worker: true,
    file: {
      agents: { scripted: { command: [process.execPath, path.join(FIXTURES, 'scriptedAgent.js')], env: { PID_DIR: pidDir } } },
      // this app's check never runs during the file: the first test proves the assignment's path on its own
      multiAgent: { agents: [{ name: AGENT, llm: 'scripted' }], actorCheckIntervalMs: 600_000 },
    },
  });
});
afterAll(() => closeAgentsStack(stack, { agents: [AGENT], groups, pidDir }));

const call = (app: FastifyInstance, method: 'GET' | 'POST', url: string, payload?: unknown) =>
  app.inject({ method, url, payload: payload as object, headers: { 'x-api-key': TEST_API_KEY } });

async function assign(app: FastifyInstance, task: string): Promise<string> {
  const res = await call(app, 'POST', '/api/v1/tasks', { agent: AGENT, task });
  expect(res.statusCode).toBe(201);
  return res.json().taskId;
}

const task = async (app: FastifyInstance, id: string) => (await call(app, 'GET', `/api/v1/tasks/${id}`)).json();
const status = async (app: FastifyInstance) => (await call(app, 'GET', `/api/v1/agents/${AGENT}/status`)).json();

/** A long task that runs (its process group recorded) and a short one queued behind it. */
async function runningAndQueued(app: FastifyInstance, label: string): Promise<{ running: string; queued: string; pgid: number }> {
  await eventually(async () => (await status(app)).status === 'active', 30_000);
  const running = await assign(app, `spawn-child sleep:60000 ${label}`);
  const pidFile = path.join(pidDir, `${running}.pid`);
  const pgid = await eventually(async () => (fs.existsSync(pidFile) ? Number(fs.readFileSync(pidFile, 'utf8')) : undefined), 30_000);
  groups.push(pgid);
  await eventually(async () => (await task(app, running)).status === 'running', 10_000);
  const queued = await assign(app, `sleep:10 queued behind ${label}`);
  expect((await status(app)).queued).toBe(1);
  return { running, queued, pgid };
}

async function terminateActor(reason: string): Promise<void> {
  const client = await stack.temporal.client();
  await client.workflow.getHandle(`agent:${AGENT}`).terminate(reason);
}

async function expectCompletes(app: FastifyInstance, id: string): Promise<void> {
  const done = await eventually(async () => {
    const t = await task(app, id);
    return t.status === 'completed' || t.status === 'failed' ? t : undefined;
  }, 30_000);
  expect(done).toMatchObject({ status: 'completed', error: null });
}

/** The actor runs and is idle (it clears its current task just after the task's row is written). */
async function expectIdle(app: FastifyInstance): Promise<void> {
  const s = await eventually(async () => {
    const st = await status(app);
    return st.currentTask === null ? st : undefined;
  }, 20_000);
  expect(s).toMatchObject({ status: 'active', queued: 0 });
}

test('terminated, then a task is assigned at once: the old actor\'s tasks are failed with the reason before a new actor starts, which runs the new task', async () => {
  const app = stack.app('agents');
  const { running, queued, pgid } = await runningAndQueued(app, 'first');

  await terminateActor('operator stopped it');
  const next = await assign(app, 'sleep:10 after the termination');

  // failed by the assignment itself, before it started the new actor: no waiting
  for (const id of [running, queued]) {
    expect(await task(app, id)).toMatchObject({ status: 'failed', error: 'agent actor terminated: operator stopped it', result: null, completedAt: expect.any(String) });
  }
  await expectCompletes(app, next);
  // the terminated task's process does not run on: its activity learns of the termination from its heartbeat
  await eventually(async () => !groupAlive(pgid), 30_000);
  // the old tasks stay failed: the new actor was never given them
  for (const id of [running, queued]) expect((await task(app, id)).status).toBe('failed');
  await expectIdle(app);
}, 120_000);

test('terminated with nobody calling the API: the service fails the tasks within seconds; the agent shows inactive until the next task starts it', async () => {
  // an API replica with the default check interval (3 s), started before the termination and never restarted
  const config: ArmadaConfig = {
    ...stack.config,
    file: { ...stack.config.file, multiAgent: { agents: [{ name: AGENT, llm: 'scripted' }] } },
  };
  const replica = await buildService('agents', { db: stack.db, config, keys: stack.keys, temporal: stack.temporal, logger, metrics: stack.metrics });
  try {
    await replica.ready();
    const { running, queued, pgid } = await runningAndQueued(replica, 'second');

    await terminateActor('stuck, stopped by hand');
    for (const id of [running, queued]) {
      const t = await eventually(async () => {
        const row = await task(replica, id);
        return row.status === 'failed' ? row : undefined;
      }, 30_000);
      expect(t).toMatchObject({ error: 'agent actor terminated: stuck, stopped by hand', result: null, completedAt: expect.any(String) });
    }
    await eventually(async () => !groupAlive(pgid), 30_000);
    expect(await status(replica)).toMatchObject({ status: 'inactive', currentTask: null });
    const listed = (await call(replica, 'GET', '/api/v1/agents')).json();
    expect(listed.agents).toEqual([expect.objectContaining({ name: AGENT, status: 'inactive' })]);

    const next = await assign(replica, 'sleep:10 after the check');
    await expectCompletes(replica, next);
    await expectIdle(replica);
  } finally {
    await replica.close();
  }
}, 120_000);
