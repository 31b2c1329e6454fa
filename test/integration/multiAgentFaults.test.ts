/**
 * Multi-agent faults with a separate `armada worker` process: kill -9 it while a named agent runs a task. The task
 * is retried on a restarted worker after the heartbeat timeout; a process the lost worker left running for it (one
 * its launcher did not stop) is stopped before the retry runs, so one task never has two agent processes at once,
 * while a user's process in the task's directory (without the task's ARMADA_TASK_ID) is left alone.
 * And a restart while the worker is frozen (SIGSTOP), so that the actor cannot answer its status query: the answer
 * still names the task it fails.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { groupAlive } from '../../lib/process/processGroup';
import { buildService } from '../../api/services';
import { createPool } from '../../lib/db/pool';
import { closeAgentsStack } from '../support/agentsTeardown';
import { TEST_API_KEY, eventually, logger, startTestStack, type TestStack } from '../support/harness';
import { spawnStackWorker } from '../support/workerProcess';

const FIXTURES = path.join(__dirname, '..', 'fixtures');
const NAMED = `named-${crypto.randomBytes(3).toString('hex')}`;
const pidDir = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-agent-pids-'));

let stack: TestStack;
const workers: ChildProcess[] = [];
const groups: number[] = [];

async function startWorkerProcess(): Promise<ChildProcess> {
  const child = await spawnStackWorker(stack);
  workers.push(child);
  return child;
}

beforeAll(async () => {
  stack = await startTestStack({
    services: ['agents'],
    worker: false,
    file: {
      agents: { scripted: { command: [process.execPath, path.join(FIXTURES, 'scriptedAgent.js')], env: { PID_DIR: pidDir } } },
      multiAgent: { agents: [{ name: NAMED, llm: 'scripted' }] },
    },
  });
});
afterAll(async () => {
  for (const w of workers) if (w.exitCode === null && w.signalCode === null) w.kill('SIGKILL');
  for (const f of fs.readdirSync(pidDir)) groups.push(Number(fs.readFileSync(path.join(pidDir, f), 'utf8')));
  await closeAgentsStack(stack, { agents: [NAMED], groups, pidDir });
});

const call = (method: 'GET' | 'POST', url: string, payload?: unknown) =>
  stack.app('agents').inject({ method, url, payload: payload as object, headers: { 'x-api-key': TEST_API_KEY } });

describe('multi-agent faults', () => {
  test("kill -9 of the worker while a named agent runs a task: the lost run's processes are stopped, not a user's shell in its directory; the task runs again and completes, status recovers", async () => {
    const first = await startWorkerProcess();
    // leave-child: a grandchild (sleep 300) left in the agent's group: the lost group outlives the agent itself;
    // leave-session: one in a session of its own, which nothing but the retry's search of the directory finds
    const res = await call('POST', '/api/v1/tasks', { agent: NAMED, task: 'leave-child leave-session sleep:1000 survive a lost worker' });
    expect(res.statusCode).toBe(201);
    const taskId: string = res.json().taskId;
    const pidFile = path.join(pidDir, `${taskId}.pid`);
    const sessionFile = path.join(pidDir, `${taskId}.session.pid`);
    const lostPid = await eventually(async () => (fs.existsSync(pidFile) ? Number(fs.readFileSync(pidFile, 'utf8')) : undefined), 30_000);
    groups.push(lostPid);
    fs.rmSync(pidFile);
    const lostSession = await eventually(async () => (fs.existsSync(sessionFile) ? Number(fs.readFileSync(sessionFile, 'utf8')) : undefined), 10_000, 20);
    groups.push(lostSession);
    fs.rmSync(sessionFile);
    // a user's shell opened in the task's directory: a session of its own, without the run's ARMADA_TASK_ID
    const user = spawn('sleep', ['120'], {
      detached: true,
      stdio: 'ignore',
      cwd: path.join(stack.config.home, 'agents', NAMED, 'tasks', taskId),
      env: { PATH: process.env.PATH as string },
    });
    user.unref();
    groups.push(user.pid as number);

    first.kill('SIGKILL');
    await new Promise((r) => first.once('exit', r));
    // the agent's group is detached, but the worker's launcher stops it when the agent still runs; the grandchild of
    // an agent that had already exited is left for the retry
    expect((await call('GET', `/api/v1/tasks/${taskId}`)).json().status).toBe('running');

    await startWorkerProcess();
    // the retry (after the 10 s heartbeat timeout) starts a new process for the task...
    const retryPid = await eventually(async () => (fs.existsSync(pidFile) ? Number(fs.readFileSync(pidFile, 'utf8')) : undefined), 45_000, 50);
    expect(retryPid).not.toBe(lostPid);
    // ...and the lost one no longer runs beside it (before: it ran on to its own end, a second agent on the same task)
    await eventually(async () => !groupAlive(lostPid), 3000, 50);
    // the retry stopped what the lost run left in the directory (its processes carry the task's ARMADA_TASK_ID), and
    // only that: before, the user's shell there was killed too
    await eventually(async () => !groupAlive(lostSession), 3000, 50);
    expect(groupAlive(user.pid as number)).toBe(true);

    const done = await eventually(async () => {
      const t = (await call('GET', `/api/v1/tasks/${taskId}`)).json();
      return t.status === 'completed' || t.status === 'failed' ? t : undefined;
    }, 30_000);
    expect(done).toMatchObject({ status: 'completed', error: null, result: expect.stringMatching(/done: leave-child leave-session sleep:1000 survive a lost worker$/) });
    const s = await eventually(async () => {
      const st = (await call('GET', `/api/v1/agents/${NAMED}/status`)).json();
      return st.currentTask === null && st.tasksCompleted === 1 ? st : undefined;
    }, 20_000);
    expect(s).toMatchObject({ status: 'active', tasksFailed: 0, queued: 0 });
  }, 120_000);

  test('restart while the actor cannot answer its status query (its worker frozen): failedTask is the running task, read from PostgreSQL', async () => {
    // exactly one worker, the one frozen below: no other could answer the query in its place (the previous test's
    // retry worker when it is the only one left, else a fresh one)
    const alive = workers.filter((w) => w.exitCode === null && w.signalCode === null);
    for (const w of alive.length === 1 ? [] : alive) {
      w.kill('SIGKILL');
      await new Promise((r) => w.once('exit', r));
    }
    const worker = alive.length === 1 ? (alive[0] as ChildProcess) : await startWorkerProcess();
    const res = await call('POST', '/api/v1/tasks', { agent: NAMED, task: 'spawn-child sleep:60000 running when restarted' });
    expect(res.statusCode).toBe(201);
    const taskId: string = res.json().taskId;
    const pidFile = path.join(pidDir, `${taskId}.pid`);
    const pid = await eventually(async () => (fs.existsSync(pidFile) ? Number(fs.readFileSync(pidFile, 'utf8')) : undefined), 30_000);
    groups.push(pid);
    await eventually(async () => (await call('GET', `/api/v1/tasks/${taskId}`)).json().status === 'running', 10_000);

    // A replica whose PostgreSQL is unreachable too: it cannot know the task, so it answers 503 and sends nothing.
    const unreachable = createPool('postgres://armada@127.0.0.1:1/armada', logger, { connectionTimeoutMillis: 2000 });
    const blind = await buildService('agents', { db: unreachable, config: stack.config, keys: stack.keys, temporal: stack.temporal, logger, metrics: stack.metrics });
    await blind.ready();
    const restartsBefore: number = (await call('GET', `/api/v1/agents/${NAMED}/status`)).json().restarts;

    worker.kill('SIGSTOP'); // the actor's status query now waits for a worker that does not answer (5 s, then given up)
    let restarted: Awaited<ReturnType<typeof call>>;
    let unknowing: Awaited<ReturnType<typeof call>>;
    try {
      [restarted, unknowing] = await Promise.all([
        call('POST', `/api/v1/agents/${NAMED}/restart`),
        blind.inject({ method: 'POST', url: `/api/v1/agents/${NAMED}/restart`, headers: { 'x-api-key': TEST_API_KEY } }),
      ]);
    } finally {
      worker.kill('SIGCONT');
      await blind.close();
      await unreachable.end();
    }
    expect(restarted.statusCode).toBe(200);
    expect(restarted.json()).toMatchObject({ name: NAMED, status: 'restarting', failedTask: taskId });
    expect(unknowing.statusCode).toBe(503);
    expect(unknowing.json().detail).toMatch(/^Agent runtime unavailable: which task the restart would fail is unknown \(actor: .+; database: .+\)$/);

    // and that is the task the restart failed, once the worker runs again
    const done = await eventually(async () => {
      const t = (await call('GET', `/api/v1/tasks/${taskId}`)).json();
      return t.status === 'completed' || t.status === 'failed' ? t : undefined;
    }, 60_000);
    expect(done).toMatchObject({ status: 'failed', error: 'agent restarted', result: null });
    await eventually(async () => !groupAlive(pid), 30_000);
    // one restart reached the actor: the replica that could not know sent none
    const after = await eventually(async () => {
      const st = (await call('GET', `/api/v1/agents/${NAMED}/status`)).json();
      return st.currentTask === null ? st : undefined;
    }, 20_000);
    expect(after.restarts).toBe(restartsBefore + 1);
  }, 150_000);
});
