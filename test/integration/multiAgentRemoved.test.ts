/**
 * Agents removed from the configuration. Started with KEPT, REMOVED, LATER and EMPTY (never given a task):
 * - only the agents service restarts, without REMOVED (a split deployment: the worker runs on with its old config):
 *   REMOVED's actor is cancelled, which stops its running task's process, and its tasks are failed;
 * - then the service and the worker are stopped and started again with KEPT alone (as `armada start` would): the
 *   actors of LATER (a running task) and EMPTY are closed too, and only KEPT is listed.
 * - an empty roster (more likely a config file not read than every agent removed) closes nothing.
 * Before, every removed agent's actor ran on for ever, and its tasks stayed unfinished (or failed only as its actor
 * happened to reach them, as "no longer configured").
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { closeRemovedAgents } from '../../api/agents/actorSupervisor';
import { AgentActors } from '../../api/agents/agentActors';
import { buildService } from '../../api/services';
import type { ArmadaConfig } from '../../lib/config';
import { groupAlive } from '../../lib/process/processGroup';
import type { RunningWorkers } from '../../workers/createWorker';
import { closeAgentsStack } from '../support/agentsTeardown';
import { TEST_API_KEY, eventually, logger, startStackWorkers, startTestStack, type TestStack } from '../support/harness';

const FIXTURES = path.join(__dirname, '..', 'fixtures');
const suffix = crypto.randomBytes(3).toString('hex');
// Workflow ids (agent:<name>) are global to the Temporal namespace: names of our own.
const KEPT = `kept-${suffix}`;
const REMOVED = `removed-${suffix}`;
const LATER = `later-${suffix}`;
const EMPTY = `empty-${suffix}`;
const ALL = [KEPT, REMOVED, LATER, EMPTY];
const pidDir = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-agent-pids-'));
const groups: number[] = [];
const roster = (...names: string[]) => names.map((name) => ({ name, llm: 'scripted' }));

let stack: TestStack;
let restartedWorkers: RunningWorkers | undefined;

beforeAll(async () => {
  stack = await startTestStack({
    services: ['agents'],
    worker: true,
    file: {
      agents: { scripted: { command: [process.execPath, path.join(FIXTURES, 'scriptedAgent.js')], env: { PID_DIR: pidDir } } },
      multiAgent: { agents: roster(...ALL) },
    },
  });
});
afterAll(() => closeAgentsStack(stack, { agents: ALL, groups, pidDir, beforeClose: async () => restartedWorkers?.stop() }));

const call = (app: FastifyInstance, method: 'GET' | 'POST', url: string, payload?: unknown) =>
  app.inject({ method, url, payload: payload as object, headers: { 'x-api-key': TEST_API_KEY } });

async function assign(app: FastifyInstance, agent: string, task: string): Promise<string> {
  const res = await call(app, 'POST', '/api/v1/tasks', { agent, task });
  expect(res.statusCode).toBe(201);
  return res.json().taskId;
}

async function actorState(name: string): Promise<string> {
  const client = await stack.temporal.client();
  return (await client.workflow.getHandle(`agent:${name}`).describe()).status.name;
}

/** A long task that runs (its process group recorded, its row `running`) and a short one queued behind it. */
async function runningAndQueued(app: FastifyInstance, agent: string): Promise<{ running: string; queued: string; pgid: number }> {
  const running = await assign(app, agent, `spawn-child sleep:60000 running when ${agent} is removed`);
  const pidFile = path.join(pidDir, `${running}.pid`);
  const pgid = await eventually(async () => (fs.existsSync(pidFile) ? Number(fs.readFileSync(pidFile, 'utf8')) : undefined), 30_000);
  groups.push(pgid);
  await eventually(async () => (await call(app, 'GET', `/api/v1/tasks/${running}`)).json().status === 'running', 10_000);
  const queued = await assign(app, agent, `sleep:10 queued when ${agent} is removed`);
  return { running, queued, pgid };
}

/** The service as started again with `agents` (same database, home and task queue); closed by stack.close(). */
async function agentsServiceWith(config: ArmadaConfig): Promise<FastifyInstance> {
  const app = await buildService('agents', { db: stack.db, config, keys: stack.keys, temporal: stack.temporal, logger, metrics: stack.metrics });
  stack.apps.agents = app;
  await app.ready();
  return app;
}

const configWith = (...names: string[]): ArmadaConfig => ({ ...stack.config, file: { ...stack.config.file, multiAgent: { agents: roster(...names) } } });

async function expectCancelled(name: string): Promise<void> {
  const closed = await eventually(async () => {
    const state = await actorState(name);
    return state === 'RUNNING' ? undefined : state;
  }, 30_000);
  expect(closed).toBe('CANCELLED');
}

async function expectRemovedTasks(app: FastifyInstance, agent: string, ids: string[]): Promise<void> {
  for (const id of ids) {
    const t = (await call(app, 'GET', `/api/v1/tasks/${id}`)).json();
    expect(t).toMatchObject({ agent, status: 'failed', error: 'agent removed from the configuration', result: null, completedAt: expect.any(String) });
  }
}

test('the agents service started again without an agent (the worker runs on): its actor is cancelled, which stops its running task, and its tasks are failed', async () => {
  const before = stack.app('agents');
  await eventually(async () => {
    const body = (await call(before, 'GET', '/api/v1/agents')).json();
    return body.agents.every((a: { status: string }) => a.status === 'active');
  }, 30_000);
  const { running, queued, pgid } = await runningAndQueued(before, REMOVED);

  await before.close();
  const after = await agentsServiceWith(configWith(KEPT, LATER, EMPTY));

  await expectCancelled(REMOVED);
  await expectRemovedTasks(after, REMOVED, [running, queued]);
  // the worker, which still has REMOVED configured, did not stop it: the actor's cancellation did
  await eventually(async () => !groupAlive(pgid), 30_000);
  for (const name of [KEPT, LATER, EMPTY]) expect(await actorState(name)).toBe('RUNNING');
  expect((await call(after, 'GET', '/api/v1/agents')).json().agents.map((a: { name: string }) => a.name)).toEqual([KEPT, LATER, EMPTY]);
}, 120_000);

test('service and worker stopped and started again with one agent: the others\' actors are closed (idle ones too), their unfinished tasks failed, and they are not listed', async () => {
  const before = stack.app('agents');
  const { running, queued, pgid } = await runningAndQueued(before, LATER);

  // stop: the agents service and the worker
  await before.close();
  await stack.workers?.stop();
  // start with KEPT alone
  const config = configWith(KEPT);
  restartedWorkers = await startStackWorkers({ ...stack, config });
  const after = await agentsServiceWith(config);

  for (const name of [LATER, EMPTY]) await expectCancelled(name);
  await expectRemovedTasks(after, LATER, [running, queued]);
  await eventually(async () => !groupAlive(pgid), 30_000);
  const { rows } = await stack.db.query("SELECT id FROM agent_tasks WHERE status IN ('assigned', 'running')");
  expect(rows).toEqual([]);

  const listed = (await call(after, 'GET', '/api/v1/agents')).json();
  expect(listed).toMatchObject({ total: 1, agents: [{ name: KEPT }] });
  for (const name of [REMOVED, LATER, EMPTY]) {
    expect((await call(after, 'GET', `/api/v1/agents/${name}/status`)).statusCode).toBe(404);
    expect((await call(after, 'POST', `/api/v1/agents/${name}/restart`)).statusCode).toBe(404);
    expect((await call(after, 'POST', '/api/v1/tasks', { agent: name, task: 'x' })).statusCode).toBe(404);
  }
  // their history stays readable
  expect((await call(after, 'GET', `/api/v1/tasks?agent=${LATER}`)).json().total).toBe(2);

  // the agent still configured keeps its actor and runs tasks
  expect(await actorState(KEPT)).toBe('RUNNING');
  const kept = await assign(after, KEPT, 'sleep:10 still here');
  const done = await eventually(async () => {
    const t = (await call(after, 'GET', `/api/v1/tasks/${kept}`)).json();
    return t.status === 'completed' || t.status === 'failed' ? t : undefined;
  }, 30_000);
  expect(done).toMatchObject({ status: 'completed' });
}, 150_000);

test('an empty roster closes nothing: the running actor and its unfinished task are left alone', async () => {
  const app = stack.app('agents');
  const task = await assign(app, KEPT, 'sleep:60000 running while the roster is empty');
  await eventually(async () => (await call(app, 'GET', `/api/v1/tasks/${task}`)).json().status === 'running', 30_000);
  const config = configWith();
  // what the agents service does at start with that roster (awaited here, so the outcome is known when it returns)
  await closeRemovedAgents({ actors: new AgentActors(stack.temporal, stack.db, config, logger), db: stack.db, logger }, []);
  expect(await actorState(KEPT)).toBe('RUNNING');
  expect((await call(app, 'GET', `/api/v1/tasks/${task}`)).json()).toMatchObject({ status: 'running', error: null });
}, 90_000);
