/**
 * A retried agent run kills the process group its lost try left only when that group is really the lost run's. The
 * process row keeps the pid of the lost run's agent; once that agent is gone (its worker's launcher stops it when the
 * worker dies: docs/attempts.md, "Worker killed"), the pid is free, and on a busy host it names another process by the
 * time the retry comes a heartbeat timeout later (pid_max is 32768 on many hosts, and every git command takes a pid).
 * The test makes the first try fail right after its agent started (the worker's test-only fault point) and, at that
 * moment, points the row's pid at another process group of this host (a `sleep` in its own session, as another
 * attempt's agent or a scheduler script would be), as a reused pid would.
 *
 * A group that is still the lost run's (a process of it was started with the run's ARMADA_PROCESS_ID) is killed, also
 * when it works outside the worktree, where the retry's search by cwd cannot find it.
 *
 * Before: the retry killed whatever group had that pid (`kill(-pid, SIGKILL)` after checking only that it was alive).
 *
 * The retry's search of the worktree kills only the lost run's processes (started with its ARMADA_PROCESS_ID): a
 * user's shell or editor sitting in the worktree, or a process of another run, is left alone. Before, it killed every
 * process (and its group) whose cwd was in the worktree.
 */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import os from 'node:os';
import type { Faults } from '../../lib/faults';
import { groupAlive } from '../../lib/process/processGroup';
import type { RunningWorkers } from '../../workers/createWorker';
import { agentConfig, api } from '../support/attemptHelpers';
import { eventually, startStackWorkers, startTestStack, type TestStack } from '../support/harness';

let stack: TestStack;
let workers: RunningWorkers;
let h: ReturnType<typeof api>;
const faults: Faults = {};
const others: number[] = [];

beforeAll(async () => {
  stack = await startTestStack({ services: ['task'], worker: false, file: agentConfig() });
  workers = await startStackWorkers(stack, { faults });
  h = api(stack);
});
afterAll(async () => {
  for (const pid of others) {
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {
      /* gone */
    }
  }
  await workers?.stop();
  await stack?.close();
});

test('the pid recorded for a lost run names another process group by the time the retry comes: that group is left alone', async () => {
  const p = await h.project();
  let calls = 0;
  faults['runAgent.afterSpawn'] = async (info) => {
    if (++calls > 1) return;
    // another group of this host: a process in its own session, working elsewhere (not in the worktree)
    const other = spawn('sleep', ['120'], { detached: true, stdio: 'ignore', cwd: os.tmpdir() });
    other.unref();
    others.push(other.pid as number);
    await stack.db.query('UPDATE processes SET pid = $2 WHERE id = $1', [info.processId, other.pid]);
    throw new Error('injected fault: this try is lost');
  };
  const { attemptId, processId } = await h.start(await h.task(p.id, 'Edit after a lost try'));
  const a = await h.until(attemptId, ['completed', 'failed'], 60_000);
  expect(calls).toBe(2);
  expect(a.status).toBe('completed');
  const other = others[0] as number;
  expect(groupAlive(other)).toBe(true);
  const logs = (await h.inject('GET', `/api/processes/${processId}/logs`)).body.split('\n').filter(Boolean).map((l) => JSON.parse(l) as { level: string; message: string });
  expect(logs.some((l) => l.message.includes(`pid ${other}`) && /has been killed/.test(l.message))).toBe(false);
  expect(logs.some((l) => l.level === 'warn' && l.message.includes(`the pid recorded for the lost run (${other}) now names another process`))).toBe(true);
  expect(a.changes).toMatchObject({ filesCreated: 1, filesModified: 1 });
});

test('the group at the recorded pid is still the lost run\'s (started with its ARMADA_PROCESS_ID), though it works elsewhere: the retry kills it', async () => {
  const p = await h.project();
  let calls = 0;
  faults['runAgent.afterSpawn'] = async (info) => {
    if (++calls > 1) return;
    // what the lost run left: a process of its own session outside the worktree (so no search by cwd finds it)
    const lost = spawn('sleep', ['120'], { detached: true, stdio: 'ignore', cwd: os.tmpdir(), env: { PATH: process.env.PATH, ARMADA_PROCESS_ID: info.processId as string } });
    lost.unref();
    others.push(lost.pid as number);
    await stack.db.query('UPDATE processes SET pid = $2 WHERE id = $1', [info.processId, lost.pid]);
    throw new Error('injected fault: this try is lost');
  };
  const { attemptId, processId } = await h.start(await h.task(p.id, 'Edit after a lost try'));
  const a = await h.until(attemptId, ['completed', 'failed'], 60_000);
  expect(calls).toBe(2);
  expect(a.status).toBe('completed');
  const lost = others.at(-1) as number;
  await eventually(async () => !groupAlive(lost), 10_000, 50);
  const logs = (await h.inject('GET', `/api/processes/${processId}/logs`)).body;
  expect(logs).toContain(`previous agent run (pid ${lost}) was left by a lost worker; killing it and restarting`);
});

test("the retry's search of the worktree kills the lost run's processes there, and leaves a user's shell and another run's process in it alone", async () => {
  const p = await h.project();
  let calls = 0;
  const pids: Record<'user' | 'otherRun' | 'lostRun', number> = { user: 0, otherRun: 0, lostRun: 0 };
  faults['runAgent.afterSpawn'] = async (info) => {
    if (++calls > 1) return;
    const { rows } = await stack.db.query<{ worktree_path: string }>(
      'SELECT a.worktree_path FROM attempts a JOIN processes p ON p.attempt_id = a.id WHERE p.id = $1',
      [info.processId],
    );
    const cwd = rows[0]?.worktree_path as string;
    // each in a session of its own, working in the worktree (so only the search by cwd finds them)
    const start = (who: keyof typeof pids, env: Record<string, string>) => {
      const c = spawn('sleep', ['120'], { detached: true, stdio: 'ignore', cwd, env: { PATH: process.env.PATH as string, ...env } });
      c.unref();
      others.push(c.pid as number);
      pids[who] = c.pid as number;
    };
    start('user', {}); // a user's shell or editor opened in the worktree
    start('otherRun', { ARMADA_PROCESS_ID: randomUUID() }); // another run's (another attempt's setup service, say)
    start('lostRun', { ARMADA_PROCESS_ID: info.processId as string }); // what the lost run left behind
    throw new Error('injected fault: this try is lost');
  };
  const { attemptId, processId } = await h.start(await h.task(p.id, 'Edit after a lost try, a shell open in the worktree'));
  const a = await h.until(attemptId, ['completed', 'failed'], 60_000);
  expect(calls).toBe(2);
  expect(a.status).toBe('completed');
  await eventually(async () => !groupAlive(pids.lostRun), 10_000, 50);
  // before: both killed with the lost run's
  expect(groupAlive(pids.user)).toBe(true);
  expect(groupAlive(pids.otherRun)).toBe(true);
  const logs = (await h.inject('GET', `/api/processes/${processId}/logs`)).body;
  expect(logs).toMatch(/killed [1-9]\d* process\(es\) a lost run left in the worktree/);
});
