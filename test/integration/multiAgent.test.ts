import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { WorkflowFailedError } from '@temporalio/client';
import type { ApplicationFailure } from '@temporalio/common';
import { Worker } from '@temporalio/worker';
import { insertAgentTask } from '../../lib/db/agentTasks';
import { groupAlive } from '../../lib/process/processGroup';
import { recordHistory } from '../support/attemptHelpers';
import { eventually, startTestStack, ensureTemporalRuntime, type TestStack } from '../support/harness';

const FIXTURES = path.join(__dirname, '..', 'fixtures');
const suffix = crypto.randomBytes(3).toString('hex');
// Workflow ids (agent:<name>) are global to the Temporal namespace: names of our own.
const SLEEPER = `sleeper-${suffix}`;
const FAILER = `failer-${suffix}`;
const REMEMBERER = `rememberer-${suffix}`;
const pidDir = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-agent-pids-'));

let stack: TestStack;

beforeAll(async () => {
  stack = await startTestStack({
    services: ['agents'],
    worker: true,
    file: {
      agents: {
        scripted: { command: [process.execPath, path.join(FIXTURES, 'scriptedAgent.js')], env: { PID_DIR: pidDir } },
        failing: { command: [process.execPath, path.join(FIXTURES, 'failingAgent.js')] },
        echo: { command: [process.execPath, path.join(FIXTURES, 'scriptedAgent.js')], env: { ECHO_PROMPT: '1' } },
      },
      multiAgent: {
        agents: [
          { name: SLEEPER, role: 'worker', llm: 'scripted', tools: ['shell'] },
          { name: FAILER, role: 'breaker', llm: 'failing' },
          { name: REMEMBERER, role: 'librarian', llm: 'echo', memory: true },
        ],
      },
    },
  });
});
afterAll(async () => {
  const client = await stack.temporal.client();
  await Promise.allSettled([SLEEPER, FAILER, REMEMBERER].map((n) => client.workflow.getHandle(`agent:${n}`).terminate('test over')));
  await stack.close();
  fs.rmSync(pidDir, { recursive: true, force: true });
});

const KEY = 'test-api-key-0123456789';
const call = (method: 'GET' | 'POST', url: string, payload?: unknown) =>
  stack.app('agents').inject({ method, url, payload: payload as object, headers: { 'x-api-key': KEY } });

async function assign(agent: string, task: string, priority?: string): Promise<string> {
  const res = await call('POST', '/api/v1/tasks', { agent, task, ...(priority ? { priority } : {}) });
  expect(res.statusCode).toBe(201);
  return res.json().taskId;
}

async function finished(taskId: string, timeoutMs = 30_000) {
  return eventually(async () => {
    const t = (await call('GET', `/api/v1/tasks/${taskId}`)).json();
    return t.status === 'completed' || t.status === 'failed' ? t : undefined;
  }, timeoutMs);
}

const status = async (name: string) => (await call('GET', `/api/v1/agents/${name}/status`)).json();

describe('multi-agent service', () => {
  test('401 without a key; X-API-Key and Bearer both accepted', async () => {
    const none = await stack.app('agents').inject({ method: 'GET', url: '/api/v1/agents' });
    expect(none.statusCode).toBe(401);
    expect(none.json()).toEqual({ detail: 'Invalid API key' });
    expect((await stack.app('agents').inject({ method: 'GET', url: '/api/v1/memory/stats', headers: { 'x-api-key': 'wrong' } })).statusCode).toBe(401);
    const bearer = await stack.app('agents').inject({ method: 'GET', url: '/api/v1/agents', headers: { authorization: `Bearer ${KEY}` } });
    expect(bearer.statusCode).toBe(200);
  });

  test('agents come from the config file; their actors start with the service', async () => {
    const list = await eventually(async () => {
      const body = (await call('GET', '/api/v1/agents')).json();
      return body.agents.every((a: { status: string }) => a.status === 'active') ? body : undefined;
    });
    expect(list.total).toBe(3);
    expect(list.agents).toContainEqual({ name: SLEEPER, role: 'worker', llm: 'scripted', status: 'active', memory: false, tools: ['shell'] });
    expect(list.agents).toContainEqual({ name: REMEMBERER, role: 'librarian', llm: 'echo', status: 'active', memory: true, tools: [] });
    const s = await status(SLEEPER);
    expect(s).toMatchObject({ name: SLEEPER, status: 'active', currentTask: null, tasksCompleted: 0 });
    expect(s.uptime).toMatch(/^(\d+[dhm] )*\d+s$/);
    expect((await call('GET', '/api/v1/agents/nobody/status')).statusCode).toBe(404);
  });

  test('five tasks of mixed priority run one at a time, high > normal (= medium) > low, FIFO within a priority; status shows the current task', async () => {
    const gate = await assign(SLEEPER, 'sleep:4000 gate');
    const running = await eventually(async () => {
      const s = await status(SLEEPER);
      return s.currentTask === gate ? s : undefined;
    });
    expect(running.currentTaskStartedAt).toEqual(expect.any(String));
    // the actor names its current task when it hands it to the activity; the row says running once the activity began
    await eventually(async () => (await call('GET', `/api/v1/tasks/${gate}`)).json().status === 'running', 10_000);

    const low = await assign(SLEEPER, 'sleep:150 low', 'low');
    const normal = await assign(SLEEPER, 'sleep:150 normal', 'normal');
    const high1 = await assign(SLEEPER, 'sleep:150 high one', 'high');
    const medium = await assign(SLEEPER, 'sleep:150 medium', 'medium');
    const high2 = await assign(SLEEPER, 'sleep:150 high two', 'high');
    expect((await call('GET', `/api/v1/tasks/${medium}`)).json()).toMatchObject({ priority: 'normal', status: 'assigned' });
    expect((await status(SLEEPER)).queued).toBe(5);

    for (const id of [gate, low, normal, high1, medium, high2]) expect((await finished(id)).status).toBe('completed');
    const { rows } = await stack.db.query<{ id: string; started_at: Date; completed_at: Date }>(
      'SELECT id, started_at, completed_at FROM agent_tasks WHERE id = ANY($1) ORDER BY started_at',
      [[gate, low, normal, high1, medium, high2]],
    );
    expect(rows.map((r) => r.id)).toEqual([gate, high1, high2, normal, medium, low]);
    for (let i = 1; i < rows.length; i++) {
      const prev = rows[i - 1] as { completed_at: Date };
      expect((rows[i] as { started_at: Date }).started_at.getTime()).toBeGreaterThanOrEqual(prev.completed_at.getTime());
    }
    const done = (await call('GET', `/api/v1/tasks/${high1}`)).json();
    expect(done).toMatchObject({ taskId: high1, agent: SLEEPER, task: 'sleep:150 high one', priority: 'high', status: 'completed', result: expect.stringMatching(/done: sleep:150 high one$/), error: null });
    expect(done.result).toMatch(/^working in /);
    expect(new Date(done.completedAt).getTime()).toBeGreaterThanOrEqual(new Date(done.createdAt).getTime());
    // The row is written before the actor counts it: wait for the actor to be idle again.
    const after = await eventually(async () => {
      const s = await status(SLEEPER);
      return s.currentTask === null && s.tasksCompleted >= 6 ? s : undefined;
    });
    expect(after.queued).toBe(0);
  });

  test('restart fails the current task with "agent restarted", stops its process group, keeps the queue and counters, resets uptime', async () => {
    const before = await status(SLEEPER);
    const long = await assign(SLEEPER, 'spawn-child sleep:60000 long');
    await eventually(async () => (await status(SLEEPER)).currentTask === long);
    const queued = await assign(SLEEPER, 'sleep:10 queued behind');
    const pid = await eventually(async () => {
      const f = path.join(pidDir, `${long}.pid`);
      return fs.existsSync(f) ? Number(fs.readFileSync(f, 'utf8')) : undefined;
    });
    expect(groupAlive(pid)).toBe(true);
    await new Promise((r) => setTimeout(r, 1100)); // uptime has whole seconds: let one pass so the reset shows

    const restarted = await call('POST', `/api/v1/agents/${SLEEPER}/restart`);
    expect(restarted.statusCode).toBe(200);
    expect(restarted.json()).toMatchObject({ name: SLEEPER, status: 'restarting', failedTask: long });

    const failed = await finished(long, 30_000);
    expect(failed).toMatchObject({ status: 'failed', error: 'agent restarted', result: null });
    const restartedTask = await (await stack.temporal.client()).workflow.getHandle(`agent-task:${long}`).result().then(() => null, (e: unknown) => e);
    expect(((restartedTask as WorkflowFailedError).cause as ApplicationFailure).message).toBe('agent restarted');
    expect(failed.completedAt).toEqual(expect.any(String));
    await eventually(async () => !groupAlive(pid), 10_000);
    expect((await finished(queued)).status).toBe('completed'); // the queue survived the restart

    const s = await eventually(async () => {
      const st = await status(SLEEPER);
      return st.currentTask === null && st.tasksCompleted === before.tasksCompleted + 1 ? st : undefined;
    });
    expect(s.restarts).toBe(before.restarts + 1);
    expect(s.tasksCompleted).toBe(before.tasksCompleted + 1);
    expect(s.tasksFailed).toBe(before.tasksFailed + 1);
    expect(new Date(s.startedAt).getTime()).toBeGreaterThan(new Date(before.startedAt).getTime());
    expect(new Date(s.startedAt).getTime()).toBeGreaterThan(Date.parse(failed.startedAt));
  });

  test('a failing agent process gives a failed task with the error', async () => {
    const id = await assign(FAILER, 'please fail');
    const t = await finished(id);
    expect(t.status).toBe('failed');
    expect(t.error).toBe('exit code 3: boom: the model is unreachable');
    expect(t.result).toBe('trying');
    expect(t.completedAt).toEqual(expect.any(String));
    const s = await eventually(async () => {
      const st = await status(FAILER);
      return st.tasksFailed === 1 ? st : undefined;
    });
    expect(s).toMatchObject({ tasksCompleted: 0, currentTask: null });

    // Temporal tells the same: the task's own workflow (a child of the actor) is Failed with the error, found by
    // ArmadaAgent; the actor stays open
    const client = await stack.temporal.client();
    const child = client.workflow.getHandle(`agent-task:${id}`);
    const err = await child.result().then(() => null, (e: unknown) => e);
    expect(err).toBeInstanceOf(WorkflowFailedError);
    const cause = (err as WorkflowFailedError).cause as ApplicationFailure;
    expect({ type: cause.type, nonRetryable: cause.nonRetryable, message: cause.message }).toEqual({
      type: 'AGENT_TASK_FAILED',
      nonRetryable: true,
      message: 'exit code 3: boom: the model is unreachable',
    });
    const listed = await eventually(async () => {
      const ids: string[] = [];
      for await (const w of client.workflow.list({ query: `ArmadaAgent="${FAILER}" AND ExecutionStatus="Failed"` })) ids.push(w.workflowId);
      return ids.length ? ids : undefined;
    });
    expect(listed).toEqual([`agent-task:${id}`]);
    expect((await client.workflow.getHandle(`agent:${FAILER}`).describe()).status.name).toBe('RUNNING');
    await recordHistory(stack, `agent:${FAILER}`, 'agent-failed-task-child');
    await recordHistory(stack, `agent-task:${id}`, 'agent-task-failed');
  });

  test('memory agents get the top hits prepended to the prompt and their result stored back', async () => {
    await call('POST', '/api/v1/memory', { content: 'The staging cluster is deployed with helm from the ops repo', agent: 'ops' });
    await call('POST', '/api/v1/memory', { content: 'Lunch is at noon' });
    const id = await assign(REMEMBERER, 'deploy the staging cluster');
    const t = await finished(id);
    expect(t.status).toBe('completed');
    // the task row is written before the task's workflow returns: wait for the workflow's end, then read its status
    const taskWorkflow = (await stack.temporal.client()).workflow.getHandle(`agent-task:${id}`);
    await taskWorkflow.result();
    expect((await taskWorkflow.describe()).status.name).toBe('COMPLETED');
    expect(t.result).toMatch(/^working in [\w-]+\nRelevant memory:\n- \[ops, \d{4}-\d\d-\d\dT[\d:.]+Z\] The staging cluster is deployed with helm from the ops repo\n\nTask:\ndeploy the staging cluster\n/);
    expect(t.result).not.toContain('Lunch');
    const stats = (await call('GET', '/api/v1/memory/stats')).json();
    expect(stats.byAgent).toEqual({ ops: 1, [REMEMBERER]: 1, '(shared)': 1 });
    expect(stats.totalEntries).toBe(3);
    const found = (await call('GET', `/api/v1/memory/search?q=staging&agent=${REMEMBERER}`)).json();
    expect(found.total).toBe(1);
    expect(found.results[0]).toMatchObject({ agent: REMEMBERER, content: t.result, metadata: { source: 'agent-task', taskId: id } });
  });

  test('task list filters by agent and status with limit/offset; bad input is a 4xx with {detail}', async () => {
    const all = (await call('GET', `/api/v1/tasks?agent=${SLEEPER}&limit=500`)).json();
    expect(all.total).toBeGreaterThanOrEqual(8);
    expect(all.tasks.every((t: { agent: string }) => t.agent === SLEEPER)).toBe(true);
    const failed = (await call('GET', `/api/v1/tasks?agent=${SLEEPER}&status=failed`)).json();
    expect(failed.tasks.map((t: { error: string }) => t.error)).toEqual(['agent restarted']);
    const page = (await call('GET', `/api/v1/tasks?agent=${SLEEPER}&limit=2&offset=1`)).json();
    expect(page).toMatchObject({ limit: 2, offset: 1, total: all.total });
    expect(page.tasks.map((t: { taskId: string }) => t.taskId)).toEqual(all.tasks.slice(1, 3).map((t: { taskId: string }) => t.taskId));
    expect((await call('GET', `/api/v1/tasks?status=failed`)).json().total).toBe(2);

    const unknownAgent = await call('POST', '/api/v1/tasks', { agent: 'nobody', task: 'x' });
    expect(unknownAgent.statusCode).toBe(404);
    expect(unknownAgent.json()).toEqual({ detail: "Agent 'nobody' not found" });
    const badPriority = await call('POST', '/api/v1/tasks', { agent: SLEEPER, task: 'x', priority: 'urgent' });
    expect(badPriority.statusCode).toBe(400);
    expect(badPriority.json().detail).toMatch(/priority/);
    expect((await call('POST', '/api/v1/tasks', { agent: SLEEPER })).statusCode).toBe(400);
    expect((await call('GET', '/api/v1/tasks/not-a-task')).statusCode).toBe(404);
    expect((await call('GET', '/api/v1/tasks?limit=501')).statusCode).toBe(400);
    expect((await call('GET', '/api/v1/tasks?status=done')).statusCode).toBe(400);
  });

  test('a terminated actor shows as inactive, and the next assignment starts it again', async () => {
    const client = await stack.temporal.client();
    await client.workflow.getHandle(`agent:${FAILER}`).terminate('operator stopped it');
    const s = await status(FAILER);
    expect(s).toMatchObject({ name: FAILER, status: 'inactive', currentTask: null, uptime: '0s' });
    const id = await assign(FAILER, 'fail again');
    expect((await finished(id)).error).toMatch(/^exit code 3/);
    expect((await status(FAILER)).status).toBe('active');
  });

  test('a task whose assignment was lost is sent to its actor by the running service', async () => {
    // A row written without its signal (as if the API died in between); multiAgentLostAssignment.test.ts has the races.
    const orphan = await insertAgentTask(stack.db, { id: `orphan-${suffix}`, agent: SLEEPER, task: 'sleep:10 orphan', priority: 'low' });
    const t = await finished(orphan.id);
    expect(t).toMatchObject({ status: 'completed', result: expect.stringMatching(/done: sleep:10 orphan$/) });
  });

  test('the actor\'s history (signals, a cancelled activity, memory) replays deterministically', async () => {
    const client = await stack.temporal.client();
    for (const name of [SLEEPER, REMEMBERER]) {
      const history = await client.workflow.getHandle(`agent:${name}`).fetchHistory();
      ensureTemporalRuntime();
      await Worker.runReplayHistory({ workflowBundle: { codePath: process.env.ARMADA_WORKFLOW_BUNDLE as string } }, history);
    }
  });
});
