/**
 * A worker that comes up while PostgreSQL is away (killed with kill -9, started again 10 s later), with six tasks the
 * API accepted (201) waiting in a named agent's queue: every task completes, each run once. runAgentTask waits for
 * PostgreSQL inside itself before its process starts (activities/untilPostgresAnswers.ts); before, the first task's
 * first step (marking it running) used up the activity's three tries (1 + 2 s) during the outage and the task failed
 * with `connect ECONNREFUSED 127.0.0.1:<port>`. The agents service and the worker run in this process against a
 * PostgreSQL of this file's own (test/support/ownPostgres.ts); the agent (test/fixtures/scriptedAgent.js) appends its
 * task id to RUN_LOG at each run.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { closeAgentsStack } from '../support/agentsTeardown';
import type { RunningWorkers } from '../../workers/createWorker';
import { TEST_API_KEY, eventually, startStackWorkers, startTestStack, type TestStack } from '../support/harness';
import { startOwnPostgres, type OwnPostgres } from '../support/ownPostgres';

jest.setTimeout(600_000);

const FIXTURES = path.join(__dirname, '..', 'fixtures');
// the actor's workflow id (agent:<name>) is global to the Temporal namespace: a name of our own
const AGENT = `queue-${crypto.randomBytes(3).toString('hex')}`;

let home: string;
let pg: OwnPostgres;
let stack: TestStack;
let runLog: string;
let workers: RunningWorkers | undefined;

beforeAll(async () => {
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-agents-pg-'));
  runLog = path.join(home, 'runs.log');
  pg = await startOwnPostgres(path.join(home, 'pg'));
  stack = await startTestStack({
    services: ['agents'],
    worker: false,
    databaseUrl: pg.url,
    file: {
      agents: { scripted: { command: [process.execPath, path.join(FIXTURES, 'scriptedAgent.js')], env: { RUN_LOG: runLog } } },
      multiAgent: { agents: [{ name: AGENT, llm: 'scripted' }] },
    },
  });
}, 300_000);

afterAll(async () => {
  if (stack) await closeAgentsStack(stack, { agents: [AGENT], groups: [], pidDir: path.join(home, 'none'), beforeClose: async () => workers?.stop() });
  await pg?.close();
  if (home) fs.rmSync(home, { recursive: true, force: true });
});

const call = (method: 'GET' | 'POST', url: string, payload?: unknown) =>
  stack.app('agents').inject({ method, url, payload: payload as object, headers: { 'x-api-key': TEST_API_KEY } });

test('a worker starts while PostgreSQL is away (kill -9, back after 10 s): every accepted task completes, each run once', async () => {
  const taskIds: string[] = [];
  for (let i = 1; i <= 6; i++) {
    const res = await call('POST', '/api/v1/tasks', { agent: AGENT, task: `sleep:200 task ${i}` });
    expect(res.statusCode).toBe(201);
    taskIds.push(res.json().taskId);
  }
  await pg.kill();
  // the actor and its tasks wait in Temporal; the worker takes them up now, with PostgreSQL down
  workers = await startStackWorkers(stack);
  await new Promise((r) => setTimeout(r, 10_000));
  await pg.start();

  const ended = [];
  for (const id of taskIds) {
    ended.push(
      await eventually(async () => {
        const t = (await call('GET', `/api/v1/tasks/${id}`)).json();
        return t.status === 'completed' || t.status === 'failed' ? t : undefined;
      }, 240_000, 200),
    );
  }
  expect(ended.map((t) => ({ status: t.status, error: t.error }))).toEqual(taskIds.map(() => ({ status: 'completed', error: null })));
  const runs = fs.readFileSync(runLog, 'utf8').split('\n').filter(Boolean);
  expect(Object.fromEntries(taskIds.map((id) => [id, runs.filter((r) => r === id).length]))).toEqual(Object.fromEntries(taskIds.map((id) => [id, 1])));
});
