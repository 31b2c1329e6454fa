/**
 * Idempotent retries of the git and agent activities: each test makes an activity fail right after its side effect
 * (the worker's test-only fault points, lib/faults.ts), so Temporal retries it, and checks the retry's outcome on
 * disk, in git and through the API.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Faults } from '../../lib/faults';
import { groupAlive } from '../../lib/process/processGroup';
import type { RunningWorkers } from '../../workers/createWorker';
import { eventually, startStackWorkers, startTestStack, type TestStack } from '../support/harness';
import { agentConfig, api, gitOut, recordHistory } from '../support/attemptHelpers';

let stack: TestStack;
let workers: RunningWorkers;
let h: ReturnType<typeof api>;
/** The worker's fault hooks: each test sets the ones it needs and clears them after. */
const faults: Faults = {};
let tmp: string;

beforeAll(async () => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-retries-'));
  stack = await startTestStack({ services: ['task'], worker: false, file: agentConfig() });
  // one agent at a time on this worker: a slot leaked by a failed try would block every later run
  workers = await startStackWorkers(stack, { maxAgents: 1, faults });
  h = api(stack);
});
afterEach(() => {
  for (const k of Object.keys(faults)) delete faults[k as keyof Faults];
});
afterAll(async () => {
  await workers?.stop();
  await stack?.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

/** A hook that fails the activity the first time only, counting its calls. */
function failOnce(calls: Record<string, unknown>[]): (info: Record<string, unknown>) => void {
  return (info) => {
    calls.push(info);
    if (calls.length === 1) throw new Error('injected fault: the result of this try is lost');
  };
}

async function completedAttempt(title: string) {
  const p = await h.project();
  const { attemptId } = await h.start(await h.task(p.id, title));
  const a = await h.until(attemptId, ['completed', 'failed'], 60_000);
  expect(a.status).toBe('completed');
  return { repo: p.repo, attempt: a };
}

describe('mergeBranch retried after its merge landed', () => {
  test.each(['squash', 'ff', 'no-ff'] as const)('%s: merged once, with one commit, and recorded merged', async (strategy) => {
    const { repo, attempt } = await completedAttempt(`Edit to merge (${strategy})`);
    const before = gitOut(repo, 'rev-parse', 'main');
    const calls: Record<string, unknown>[] = [];
    faults['mergeBranch.afterMerge'] = failOnce(calls);

    const r = await h.inject('POST', `/api/attempts/${attempt.id}/merge`, { strategy });
    expect(r.statusCode).toBe(200);
    expect(calls).toHaveLength(1); // the retry found the merge and did not merge again
    const head = gitOut(repo, 'rev-parse', 'main');
    expect(r.json().data).toMatchObject({ merged: true, commitSha: head });
    expect(head).toBe(calls[0]?.commitSha);
    // exactly one commit (squash, ff: the branch's one commit) or one merge commit on top of the old base
    expect(gitOut(repo, 'rev-list', '--count', '--first-parent', `${before}..main`)).toBe('1');
    expect(gitOut(repo, 'show', 'main:src/added.txt')).toBe('one\ntwo\nthree');
    const view = await h.attempt(attempt.id);
    expect(view).toMatchObject({ merged: true, mergeCommit: head });
    expect(view.mergedAt).not.toBeNull();
    expect((await h.inject('GET', `/api/tasks/${attempt.taskId}`)).json().data.status).toBe('completed');
  }, 90_000);
});

test('prepareWorktree retried after the worktree was made: the setup script still runs to completion', async () => {
  const marker = path.join(tmp, 'setup-runs.txt');
  const repo = (await h.project()).repo;
  const project = await h.inject('POST', '/api/projects', {
    name: 'setup-retry',
    repository: { url: repo },
    setup_script: `echo setting up; echo "$ARMADA_ATTEMPT_ID" >> ${marker}`,
  });
  expect(project.statusCode).toBe(201);
  const calls: Record<string, unknown>[] = [];
  faults['prepareWorktree.afterWorktree'] = failOnce(calls);

  const { attemptId } = await h.start(await h.task(project.json().data.id, 'Edit after a retried setup'));
  const a = await h.until(attemptId, ['completed', 'failed'], 60_000);
  expect(a.status).toBe('completed');
  expect(calls).toHaveLength(2); // the first try failed after making the worktree; the retry found it there
  expect(calls[0]?.worktreePath).toBe(a.worktreePath);
  expect(fs.readFileSync(marker, 'utf8')).toBe(`${attemptId}\n`); // ran once, on the retry
  const logs = (await h.inject('GET', `/api/attempts/${attemptId}/logs`)).body.split('\n').filter(Boolean).map((l) => JSON.parse(l));
  expect(logs.filter((l) => l.source === 'setup').map((l) => l.message)).toEqual(['setting up', 'setup script exited with code 0']);
}, 90_000);

test("prepareWorktree retried while its setup script ran: the lost run's setup is stopped, a user's shell in the worktree is left alone", async () => {
  const started = path.join(tmp, 'setup-started');
  const repo = (await h.project()).repo;
  // the first run of the script stays (as one whose worker was lost would); the retry's returns at once
  const project = await h.inject('POST', '/api/projects', {
    name: 'setup-lost',
    repository: { url: repo },
    setup_script: `echo setting up; if [ ! -e ${started} ]; then touch ${started}; sleep 300; fi`,
  });
  expect(project.statusCode).toBe(201);
  const pids: { lostSetup?: number; user?: number } = {};
  let calls = 0;
  faults['prepareWorktree.setupStarted'] = async (info) => {
    if (++calls > 1) return;
    pids.lostSetup = info.pid as number;
    // a user's shell or editor opened in the worktree meanwhile: a session of its own, no Armada marker
    const user = spawn('sleep', ['120'], { detached: true, stdio: 'ignore', cwd: info.worktreePath as string, env: { PATH: process.env.PATH as string } });
    user.unref();
    pids.user = user.pid as number;
    await eventually(async () => fs.existsSync(started), 10_000, 20);
    throw new Error('injected fault: this try is lost while its setup script runs');
  };
  try {
    const { attemptId } = await h.start(await h.task(project.json().data.id, 'Edit after a lost setup run'));
    const a = await h.until(attemptId, ['completed', 'failed'], 60_000);
    expect(a.status).toBe('completed');
    expect(calls).toBe(2);
    // the lost run's script (and its sleep) stopped; before, the user's process was killed with it
    await eventually(async () => !groupAlive(pids.lostSetup as number), 10_000, 50);
    expect(groupAlive(pids.user as number)).toBe(true);
    const logs = (await h.inject('GET', `/api/attempts/${attemptId}/logs`)).body.split('\n').filter(Boolean).map((l) => JSON.parse(l));
    expect(logs.some((l) => l.source === 'setup' && l.level === 'warn' && /stopped [1-9]\d* process\(es\) of an earlier setup run/.test(l.message))).toBe(true);
  } finally {
    for (const pid of [pids.lostSetup, pids.user]) {
      try {
        if (pid) process.kill(-pid, 'SIGKILL');
      } catch {
        /* gone */
      }
    }
  }
}, 90_000);

test('a task deleted while its first run makes the worktree (its host not recorded yet): cleanup pending, and the run removes the worktree and branch it made', async () => {
  const p = await h.project();
  const taskId = await h.task(p.id, 'Deleted while its worktree is made');
  let release: () => void = () => undefined;
  const gate = new Promise<void>((resolve) => (release = resolve));
  let made: Record<string, unknown> | undefined;
  faults['prepareWorktree.beforeRecord'] = async (info) => {
    made = info;
    await gate;
  };
  await h.start(taskId);
  const worktree = await eventually(async () => made, 30_000, 20);
  expect(fs.existsSync(worktree.worktreePath as string)).toBe(true);
  const del = await h.inject('DELETE', `/api/tasks/${taskId}`);
  expect(del.statusCode).toBe(200);
  expect(del.json().data).toEqual({ deleted: true, taskId, cleanup: 'pending' }); // before: "done", and both stayed
  release();
  await eventually(async () => !fs.existsSync(worktree.worktreePath as string), 20_000, 50);
  await eventually(async () => gitOut(p.repo, 'branch', '--list', worktree.branch as string) === '', 10_000, 50);
  expect(gitOut(p.repo, 'worktree', 'list')).not.toContain(worktree.worktreePath as string);
}, 90_000);

test('an attempt cancelled while its worktree is made, the cancel reaching its row before its workflow: the run ends cancelled (its result and ArmadaAttemptStatus), not failed', async () => {
  const p = await h.project();
  const taskId = await h.task(p.id, 'Cancelled while its worktree is made');
  let release: () => void = () => undefined;
  const gate = new Promise<void>((resolve) => (release = resolve));
  let made: Record<string, unknown> | undefined;
  faults['prepareWorktree.beforeRecord'] = async (info) => {
    made = info;
    await gate;
  };
  const { attemptId } = await h.start(taskId);
  const worktree = await eventually(async () => made, 30_000, 20);
  // the first half of the API's cancel (the row); its second, the workflow's cancel request, comes after the
  // activity has ended in this interleaving (seen under load: the run then ended 'failed', ArmadaAttemptStatus too)
  await stack.db.query("UPDATE attempts SET status = 'cancelled', updated_at = now() WHERE id = $1", [attemptId]);
  release();
  const handle = (await stack.temporal.client()).workflow.getHandle(`attempt:${attemptId}`);
  expect(await handle.result()).toBe('cancelled');
  expect((await handle.describe()).searchAttributes.ArmadaAttemptStatus).toEqual(['cancelled']);
  expect((await h.attempt(attemptId)).status).toBe('cancelled');
  await eventually(async () => !fs.existsSync(worktree.worktreePath as string), 20_000, 50);
  await recordHistory(stack, `attempt:${attemptId}`, 'attempt-cancelled-while-preparing');
}, 90_000);

test('runAgent failing after the spawn: the worker slot is released and the agent process group is gone', async () => {
  const p = await h.project();
  const pids: number[] = [];
  faults['runAgent.afterSpawn'] = (info) => {
    pids.push(info.pid as number);
    throw new Error('injected fault after the agent started');
  };
  // SLEEP: the agent and a child `sleep 120` in its group would run for minutes unless stopped
  const { attemptId, processId } = await h.start(await h.task(p.id, 'SLEEP through a failing run'));
  const a = await h.until(attemptId, ['completed', 'failed'], 60_000);
  expect(a.status).toBe('failed');
  expect(a.error).toContain('injected fault after the agent started');
  expect(pids).toHaveLength(3); // the try and its two retries each started an agent
  // the last try's agent has no retry to clean up after it: its own try stopped the group
  for (const pid of pids) await eventually(async () => !groupAlive(pid), 10_000);
  const proc = (await h.inject('GET', `/api/processes/${processId}`)).json().data;
  expect(proc.status).toBe('failed');
  const logs = (await h.inject('GET', `/api/processes/${processId}/logs`)).body;
  expect(logs).toContain('agent run failed: injected fault after the agent started');
  const metrics = (await h.inject('GET', '/metrics')).body;
  expect(metrics).toMatch(/armada_agent_processes_running\{llm="scripted"\} 0\b/);

  // with --max-agents 1, the next run starts only if the failed tries released their slot
  delete faults['runAgent.afterSpawn'];
  const next = await h.start(await h.task(p.id, 'Edit after the failed run'));
  expect((await h.until(next.attemptId, ['completed', 'failed'], 30_000)).status).toBe('completed');
}, 120_000);

test('runAgent retried after its agent ended (agent-run-records-outcome): the retry commits and records the outcome without starting the agent again; the run is two activities', async () => {
  const p = await h.project();
  const spawned: unknown[] = [];
  faults['runAgent.afterSpawn'] = (info) => void spawned.push(info.pid);
  // the first try is lost between the recorded end of its agent and the commit
  const calls: Record<string, unknown>[] = [];
  faults['runAgent.afterRun'] = failOnce(calls);
  const { attemptId, processId } = await h.start(await h.task(p.id, 'Edit, the try lost before its commit'));
  const a = await h.until(attemptId, ['completed', 'failed'], 60_000);
  expect(a.status).toBe('completed');
  expect(spawned).toHaveLength(1);
  expect(calls.map((c) => [c.attempt, c.status])).toEqual([
    [1, 'completed'],
    [2, 'completed'],
  ]);
  // the agent's edit, committed once on the attempt branch
  expect(gitOut(p.repo, 'show', `${a.branch}:README.md`)).toBe('line 1\nline 2\nadded by the agent');
  expect(gitOut(p.repo, 'rev-list', '--count', `main..${a.branch}`)).toBe('1');
  expect((await h.inject('GET', `/api/processes/${processId}`)).json().data.status).toBe('completed');
  const logs = (await h.inject('GET', `/api/processes/${processId}/logs`)).body;
  expect(logs).not.toContain('agent run restarted');
  // no commitAndRecordOutcome activity: runAgent (tried twice) committed and recorded
  const history = await (await stack.temporal.client()).workflow.getHandle(`attempt:${attemptId}`).fetchHistory();
  const scheduled = (history.events ?? []).flatMap((e) => (e.activityTaskScheduledEventAttributes ? [e.activityTaskScheduledEventAttributes.activityType?.name] : []));
  expect(scheduled).toEqual(['prepareWorktree', 'runAgent']);
  // prepareWorktree's first try, runAgent's second
  const started = (history.events ?? []).flatMap((e) => (e.activityTaskStartedEventAttributes ? [e.activityTaskStartedEventAttributes.attempt] : []));
  expect(started).toEqual([1, 2]);
}, 90_000);

test("a follow-up whose runAgent fails for good (every try): the attempt is recorded failed saying why, and the next follow-up runs", async () => {
  const p = await h.project();
  const { attemptId } = await h.start(await h.task(p.id, 'Edit, then a follow-up that cannot run'));
  expect((await h.until(attemptId, ['completed', 'failed'], 60_000)).status).toBe('completed');
  const tries: unknown[] = [];
  faults['runAgent.afterSpawn'] = (info) => {
    tries.push(info.processId);
    throw new Error('injected fault: this host cannot run the agent');
  };
  expect((await h.inject('POST', `/api/attempts/${attemptId}/follow-up`, { prompt: 'FOLLOWUP write notes' })).statusCode).toBe(202);
  const failed = await eventually(async () => {
    const a = (await h.inject('GET', `/api/attempts/${attemptId}`)).json().data;
    return a.status === 'failed' ? a : undefined;
  }, 60_000);
  expect(tries).toHaveLength(3); // the follow-up's three tries, one process
  expect(new Set(tries).size).toBe(1);
  expect(failed.error).toMatch(/^agent run failed: .*injected fault: this host cannot run the agent/);
  // the attempt's workflow is still open: the next follow-up runs and completes the attempt
  delete faults['runAgent.afterSpawn'];
  expect((await h.inject('POST', `/api/attempts/${attemptId}/follow-up`, { prompt: 'FOLLOWUP write notes' })).statusCode).toBe(202);
  await eventually(async () => (await h.inject('GET', `/api/attempts/${attemptId}`)).json().data.status === 'completed', 60_000);
  const processes = (await h.inject('GET', `/api/processes?attemptId=${attemptId}`)).json().data as { status: string }[];
  expect(processes.map((x) => x.status).sort()).toEqual(['completed', 'completed', 'failed']);
}, 120_000);

test('runAgent retried after a lost run whose git left an index.lock: that try fails without starting the agent; the next one, the lock gone, resets the worktree and runs it', async () => {
  const p = await h.project();
  const worktreeOf = async (processId: string) =>
    (await stack.db.query<{ worktree_path: string }>('SELECT a.worktree_path FROM processes p JOIN attempts a ON a.id = p.attempt_id WHERE p.id = $1', [processId])).rows[0]
      ?.worktree_path as string;
  let lock = '';
  /** What each started agent found in the worktree. */
  const spawns: { lockThere: boolean; keep: string }[] = [];
  faults['runAgent.afterSpawn'] = async (info) => {
    const wt = await worktreeOf(info.processId as string);
    lock = `${path.resolve(wt, gitOut(wt, 'rev-parse', '--git-path', 'index'))}.lock`;
    spawns.push({ lockThere: fs.existsSync(lock), keep: fs.readFileSync(path.join(wt, 'src', 'keep.txt'), 'utf8') });
    if (spawns.length > 1) return;
    // the first try's worker is lost while its agent edits a tracked file and a git of the agent's holds the index
    fs.writeFileSync(path.join(wt, 'src', 'keep.txt'), 'edited by the lost run\n');
    fs.writeFileSync(lock, '');
    throw new Error('injected fault: the worker of this try is lost');
  };
  const resets: number[] = [];
  faults['runAgent.beforeReset'] = (info) => {
    resets.push(info.attempt as number);
    // the first reset meets it young (a git of the lost run may still be letting go of it), so it is left and refused
    // however late this try came (a stale one, older than 5 s and unheld, is removed: test/unit/staleWorktreeLocks.test.ts)
    if (resets.length === 1) fs.utimesSync(lock, new Date(), new Date());
    if (resets.length === 2) fs.rmSync(lock); // between the refused try and the next: the lock is removed
  };

  const { attemptId, processId } = await h.start(await h.task(p.id, 'Edit after a lost run left a lock'));
  const a = await h.until(attemptId, ['completed', 'failed'], 90_000);
  // the agent started twice, each time on the last commit's tree without the lock: the second try (refused reset)
  // did not start it (before: it did, on the lost run's edit, and with the lock still there)
  expect(spawns).toEqual([
    { lockThere: false, keep: 'keep\n' },
    { lockThere: false, keep: 'keep\n' },
  ]);
  expect(resets).toEqual([2, 3]);
  expect(a.status).toBe('completed');
  const logs = (await h.inject('GET', `/api/processes/${processId}/logs`)).body;
  expect(logs).toContain(`${lock} exists`);
  expect(logs).toContain('so the agent was not started');
  // the attempt's commit holds the agent's edit once and nothing of the lost run's
  expect(gitOut(p.repo, 'show', `${a.branch}:src/keep.txt`)).toBe('keep');
  expect(gitOut(p.repo, 'show', `${a.branch}:README.md`)).toBe('line 1\nline 2\nadded by the agent');
  expect((await h.inject('GET', `/api/processes/${processId}`)).json().data.status).toBe('completed');
}, 150_000);

test("runAgent retried after a lost run that took the worktree's .git with it: the reset is refused for good, the agent is not started again and the attempt fails saying why", async () => {
  const p = await h.project();
  let spawns = 0;
  faults['runAgent.afterSpawn'] = async (info) => {
    if (++spawns > 1) return;
    const { rows } = await stack.db.query<{ worktree_path: string }>('SELECT a.worktree_path FROM processes p JOIN attempts a ON a.id = p.attempt_id WHERE p.id = $1', [
      info.processId,
    ]);
    fs.rmSync(path.join(rows[0]?.worktree_path as string, '.git'));
    throw new Error('injected fault: the worker of this try is lost');
  };
  const resets: number[] = [];
  faults['runAgent.beforeReset'] = (info) => void resets.push(info.attempt as number);

  const { attemptId } = await h.start(await h.task(p.id, 'Edit after a lost run broke the worktree'));
  const a = await h.until(attemptId, ['completed', 'failed'], 90_000);
  expect(spawns).toBe(1); // before: the retry ran the agent in a directory git no longer knew
  expect(resets).toEqual([2]); // WorktreeResetFailed is not retried
  expect(a.status).toBe('failed');
  expect(a.error).toContain(`the worktree ${a.worktreePath} could not be reset before the agent runs again, so the agent was not started: fatal: not a git repository`);
}, 150_000);
