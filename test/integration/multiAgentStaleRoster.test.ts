/**
 * Two agents-service replicas with different rosters against one database. OLD started with KEPT and GONE; NEW
 * started later with KEPT alone, so it closes GONE (its actor cancelled). OLD, still running with GONE in its config,
 * then treats GONE as removed: assignments, status and restart are 404, GONE is not listed, and its actor stays
 * closed. Before, OLD's next assignment started GONE's actor again and ran the task. A replica started later still
 * with GONE in its roster (a rollback) brings GONE back, on OLD too: the roster a replica started with last wins.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { AgentActors } from '../../api/agents/agentActors';
import { buildService } from '../../api/services';
import type { ArmadaConfig } from '../../lib/config';
import { closeAgentsStack } from '../support/agentsTeardown';
import { TEST_API_KEY, eventually, logger, startTestStack, type TestStack } from '../support/harness';

const FIXTURES = path.join(__dirname, '..', 'fixtures');
const suffix = crypto.randomBytes(3).toString('hex');
// Workflow ids (agent:<name>) are global to the Temporal namespace: names of our own.
const KEPT = `kept-${suffix}`;
const GONE = `gone-${suffix}`;
const pidDir = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-agent-pids-'));
const roster = (...names: string[]) => names.map((name) => ({ name, llm: 'scripted' }));

let stack: TestStack;
const replicas: FastifyInstance[] = [];

beforeAll(async () => {
  stack = await startTestStack({
    services: ['agents'],
    worker: true,
    file: {
      agents: { scripted: { command: [process.execPath, path.join(FIXTURES, 'scriptedAgent.js')] } },
      multiAgent: { agents: roster(KEPT, GONE) },
    },
  });
});
afterAll(() => closeAgentsStack(stack, { agents: [KEPT, GONE], groups: [], pidDir, beforeClose: () => Promise.allSettled(replicas.map((r) => r.close())) }));

const call = (app: FastifyInstance, method: 'GET' | 'POST', url: string, payload?: unknown) =>
  app.inject({ method, url, payload: payload as object, headers: { 'x-api-key': TEST_API_KEY } });

async function replicaWith(...names: string[]): Promise<FastifyInstance> {
  const config: ArmadaConfig = { ...stack.config, file: { ...stack.config.file, multiAgent: { agents: roster(...names) } } };
  const app = await buildService('agents', { db: stack.db, config, keys: stack.keys, temporal: stack.temporal, logger, metrics: stack.metrics });
  replicas.push(app);
  await app.ready();
  return app;
}

async function actorState(name: string): Promise<string> {
  const client = await stack.temporal.client();
  return (await client.workflow.getHandle(`agent:${name}`).describe()).status.name;
}

async function completes(app: FastifyInstance, agent: string, task: string): Promise<void> {
  const res = await call(app, 'POST', '/api/v1/tasks', { agent, task });
  expect(res.statusCode).toBe(201);
  const done = await eventually(async () => {
    const t = (await call(app, 'GET', `/api/v1/tasks/${res.json().taskId}`)).json();
    return t.status === 'completed' || t.status === 'failed' ? t : undefined;
  }, 30_000);
  expect(done).toMatchObject({ status: 'completed', error: null });
}

const listed = async (app: FastifyInstance): Promise<string[]> => (await call(app, 'GET', '/api/v1/agents')).json().agents.map((a: { name: string }) => a.name);

test('an agent removed by a replica started later with a newer roster stays removed on a replica still running with the old one, until a later roster lists it again', async () => {
  const old = stack.app('agents');
  await eventually(async () => (await call(old, 'GET', '/api/v1/agents')).json().agents.every((a: { status: string }) => a.status === 'active'), 30_000);
  await completes(old, GONE, 'sleep:10 before the removal');

  // NEW starts without GONE: GONE's actor is closed
  const newer = await replicaWith(KEPT);
  await eventually(async () => (await actorState(GONE)) === 'CANCELLED', 30_000);

  // OLD still has GONE in its config: it answers as NEW does, and starts no actor for it
  const { rows: before } = await stack.db.query('SELECT id FROM agent_tasks WHERE agent = $1', [GONE]);
  for (const app of [old, newer]) {
    const assigned = await call(app, 'POST', '/api/v1/tasks', { agent: GONE, task: 'sleep:10 after the removal' });
    expect(assigned.statusCode).toBe(404);
    expect(assigned.json().detail).toMatch(new RegExp(`^Agent '${GONE}' was removed from the configuration \\(roster version \\d+\\)$`));
    expect((await call(app, 'POST', `/api/v1/agents/${GONE}/restart`)).statusCode).toBe(404);
    expect((await call(app, 'GET', `/api/v1/agents/${GONE}/status`)).statusCode).toBe(404);
    expect(await listed(app)).toEqual([KEPT]);
  }
  const { rows: after } = await stack.db.query('SELECT id FROM agent_tasks WHERE agent = $1', [GONE]);
  expect(after).toEqual(before);
  // nor does anything else of OLD's (its start-up, its check sending a lost assignment) start the actor
  const oldActors = new AgentActors(stack.temporal, stack.db, stack.config, logger);
  await expect(oldActors.ensure(GONE)).rejects.toMatchObject({ statusCode: 404, code: 'AGENT_REMOVED' });
  expect(await actorState(GONE)).toBe('CANCELLED');
  // the agent both rosters list works on both
  await completes(old, KEPT, 'sleep:10 kept on the old replica');
  await completes(newer, KEPT, 'sleep:10 kept on the new replica');
  expect(await actorState(GONE)).toBe('CANCELLED');

  // a replica started later with GONE again (a rollback to the old config): GONE is back, on OLD as well
  const rolledBack = await replicaWith(KEPT, GONE);
  await eventually(async () => (await actorState(GONE)) === 'RUNNING', 30_000);
  expect(await listed(old)).toEqual([KEPT, GONE]);
  await completes(old, GONE, 'sleep:10 after the rollback');
  await completes(rolledBack, GONE, 'sleep:10 on the rolled-back replica');
  expect(await listed(newer)).toEqual([KEPT]);
}, 180_000);
