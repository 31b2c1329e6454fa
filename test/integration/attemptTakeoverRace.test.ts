/**
 * A try of runAgent that Temporal timed out (its heartbeats did not arrive: a frozen Temporal, as in the chaos soak's
 * `temporal-freeze`, or a cut connection) while it runs on, and whose retry goes to another worker process: the retry
 * finds the row `running`, kills the agent still running and starts it again. The first try sees its agent die at
 * once; it must not record that kill as the run's end. The run ends with the second agent's outcome.
 *
 * The two tries are the runAgent activity itself, run in Temporal's activity test environment (each try in an
 * environment of its own, as two workers would run them; each with its own pool, so neither knows the other's run in
 * progress, as for two worker processes) against the test PostgreSQL. The first try's environment is cancelled as
 * a worker's is once Temporal no longer knows the try (NOT_FOUND), and its heartbeats go nowhere. The retry (activity
 * attempt 2) is held right after its kill (the test-only `runAgent.beforeReset` point) until the first try has ended:
 * the order in which the old code recorded the kill, made certain rather than left to luck (removed in session 46, the
 * two-worker version of this test depended on Temporal sending the retry to the right worker in time).
 *
 * Before (releaseProcessPid missing in cleanUpLostRun): the row still named the killed agent when the first try came
 * to record its end, so its fenced record matched; the process row ended `failed` with `agent exited with code
 * SIGKILL` (its exit code filled in by the second run) and a `process_failed` event, while the second agent ran on.
 * Until session 47 the first try still wrote `agent exited with code SIGKILL` into the run's log, as an error line
 * just before its note that it was taken over: someone following the log saw the run fail while it went on.
 *
 * The second test is the other try whose agent's end is not the run's: its worker shut down (a drain, SIGTERM) and
 * its grace period ended while the agent ran. Before, the try recorded the run `cancelled` (`agent cancelled (exit
 * SIGTERM)`), the retry returned that, and the attempt was left `running` with its workflow ended; now the row stays
 * running and the retry runs the agent again.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { ActivityCancellationDetails } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger } from '@temporalio/worker';
import type { Pool } from 'pg';
import { runAgent, type RunAgentDeps, type RunAgentInput, type RunAgentResult } from '../../activities/agent/runAgent';
import { createPool } from '../../lib/db/pool';
import { getProcess } from '../../lib/db/processes';
import { createMetrics } from '../../lib/metrics';
import { stopLauncher } from '../../lib/process/launcher';
import { groupAlive } from '../../lib/process/processGroup';
import { createProjectAndTask, insertAttempt } from '../support/attempts';
import { eventually, logger, makeGitRepo, startTestStack, type TestStack } from '../support/harness';

const runLogDir = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-takeover-race-'));
const RUN_LOG = path.join(runLogDir, 'runs.log');
const DRAINED_RUN_LOG = path.join(runLogDir, 'drained.log');
const PAUSED_RUN_LOG = path.join(runLogDir, 'paused.log');
// each run records its pid first; the first works until it is killed, the second writes a file and exits 0
const AGENT = [
  'n=$(cat "$RUN_LOG" 2>/dev/null | wc -l); echo "$$" >> "$RUN_LOG"',
  'if [ "$n" -eq 0 ]; then echo "first run $$ works until it is killed"; exec sleep 600; fi',
  'echo "second run $$"; echo "written by $$" > from-the-agent.txt',
].join('\n');

let stack: TestStack;
/** the retry's worker's pool: another worker process knows nothing of the first try's run in progress */
let otherWorkerDb: Pool;
const worktrees: string[] = [];

beforeAll(async () => {
  stack = await startTestStack({
    services: ['task'],
    worker: false,
    file: {
      agents: {
        racer: { command: ['bash', '-c', AGENT], format: 'text', env: { RUN_LOG } },
        drained: { command: ['bash', '-c', AGENT], format: 'text', env: { RUN_LOG: DRAINED_RUN_LOG } },
        paused: { command: ['bash', '-c', AGENT], format: 'text', env: { RUN_LOG: PAUSED_RUN_LOG } },
      },
      attempts: { killGraceMs: 1000 },
    },
  });
  otherWorkerDb = createPool(stack.dbUrl, logger);
});
afterAll(async () => {
  for (const pid of [...runs(), ...runs(DRAINED_RUN_LOG), ...runs(PAUSED_RUN_LOG)]) {
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {
      /* gone */
    }
  }
  await otherWorkerDb?.end();
  await stack?.close();
  await stopLauncher();
  fs.rmSync(runLogDir, { recursive: true, force: true });
  for (const dir of worktrees) fs.rmSync(dir, { recursive: true, force: true });
});

/** The line of a try Temporal timed out while its agent runs on. */
const TIMED_OUT = 'Temporal timed this try out (the worker missed its heartbeats)';

const runs = (file = RUN_LOG) => (fs.existsSync(file) ? fs.readFileSync(file, 'utf8').split('\n').filter(Boolean).map(Number) : []);

/** The process's end events (completed, failed, stopped), oldest first. */
async function endEvents(processId: string): Promise<string[]> {
  const { rows } = await stack.db.query<{ type: string }>(
    `SELECT type FROM events WHERE $1 = ANY(topics) AND type IN ('process_completed', 'process_failed', 'process_stopped') ORDER BY seq`,
    [`process:${processId}`],
  );
  return rows.map((e) => e.type);
}

/** The process's log lines in the order written. */
async function logLines(processId: string): Promise<{ level: string; message: string }[]> {
  const { rows } = await stack.db.query<{ level: string; message: string }>('SELECT level, message FROM process_logs WHERE process_id = $1 ORDER BY seq', [processId]);
  return rows;
}

/** A try of the activity as a worker runs it: attempt `attempt`, its heartbeats going nowhere (nothing listens). */
function activityTry(attempt: number): MockActivityEnvironment {
  const now = Date.now();
  return new MockActivityEnvironment(
    { attempt, startToCloseTimeoutMs: 120_000, scheduleToCloseTimeoutMs: 0, heartbeatTimeoutMs: 5000, currentAttemptScheduledTimestampMs: now, scheduledTimestampMs: now },
    { logger: new DefaultLogger('WARN') },
  );
}

/**
 * An attempt's run of agent profile `llm` in a new worktree, its first try (activity attempt 1) running, once its agent
 * has recorded its pid in `runsOf` and the process row names it.
 */
async function firstTryRunning(llm: string, runsOf: () => number[]) {
  const { taskId } = await createProjectAndTask(stack);
  const attemptId = await insertAttempt(stack, taskId);
  const worktree = makeGitRepo();
  worktrees.push(worktree);
  const input: RunAgentInput = { attemptId, taskId, processId: randomUUID(), llm, kind: 'initial', prompt: llm, worktreePath: worktree, timeoutMs: 60_000 };
  const deps: RunAgentDeps = { db: stack.db, config: stack.config, logger, metrics: createMetrics() };
  const first = activityTry(1);
  const firstTry = first.run(runAgent, deps, input).then(
    (r) => ({ returned: r }),
    (err: Error) => ({ threw: err.name }),
  );
  await eventually(async () => runsOf().length === 1 && (await getProcess(stack.db, input.processId))?.pid === runsOf()[0], 20_000, 50);
  const [firstPid] = runsOf() as [number];
  return { input, deps, worktree, first, firstTry, firstPid };
}

test('a timed-out try whose agent the retry on another worker kills does not record the kill: the run ends with the second agent', async () => {
  const { input, deps, worktree, first, firstTry, firstPid } = await firstTryRunning('racer', runs);
  // Temporal no longer knows the first try (it timed it out): the try goes on, its agent too, and its log says so
  // at once (before session 48 the line waited for the agent's next line or the try's end)
  first.cancel('NOT_FOUND', new ActivityCancellationDetails({ notFound: true }));
  await eventually(async () => (await logLines(input.processId)).some((l) => l.message.startsWith(TIMED_OUT)), 20_000, 50);

  // the retry, on another worker: it kills the first agent, then waits (before its reset and its own agent) for the
  // first try to have ended, which sees its agent killed and comes to record that end meanwhile
  const retry = activityTry(2);
  const faults: RunAgentDeps['faults'] = {
    'runAgent.beforeReset': async () => {
      await firstTry;
    },
  };
  const second: RunAgentResult = await retry.run(runAgent, { ...deps, db: otherWorkerDb, metrics: createMetrics(), faults }, input);
  expect(second.status).toBe('completed');
  expect(runs()).toHaveLength(2);
  const [, secondPid] = runs() as [number, number];
  expect(groupAlive(firstPid)).toBe(false);

  // the row is the second run's: completed, exit 0, no error, its pid
  const row = await getProcess(stack.db, input.processId);
  expect({ status: row?.status, exitCode: row?.exit_code, error: row?.error, pid: row?.pid }).toEqual({ status: 'completed', exitCode: 0, error: null, pid: secondPid });
  // one end event, the second run's (before: process_failed from the first try, then nothing from the second)
  expect(await endEvents(input.processId)).toEqual(['process_completed']);
  // the log, in the order things happened: the first run's line, Temporal's timeout of its try, the retry's kill, the
  // first try's note that it was taken over, the second run, and its end last. Before session 48 the kill's line
  // waited in the retry's queue until its agent started, so it came after the note; and the timeout's line of a silent
  // agent waited for the try's end, so on a real takeover it came after what the retry had written by then
  const logs = await logLines(input.processId);
  const messages = logs.map((l) => l.message);
  const note = `activity attempt 1's agent (pid ${firstPid}) was taken over by a later try`;
  const order = [
    `first run ${firstPid} works until it is killed`,
    TIMED_OUT,
    `previous agent run (pid ${firstPid}) was left by a lost worker; killing it and restarting`,
    note,
    `second run ${secondPid}`,
    'agent exited with code 0',
  ].map((start) => {
    const at = messages.findIndex((m) => m.startsWith(start));
    expect([start, messages.filter((m) => m.startsWith(start)).length]).toEqual([start, 1]);
    return at;
  });
  expect(order).toEqual([...order].sort((a, b) => a - b));
  expect(messages.at(-1)).toBe('agent exited with code 0');
  // the first agent's end is not the run's: no `agent exited with code SIGKILL` error mid-run (before, the first try
  // wrote it just before its note, so someone following the log saw the run fail while the second agent worked), and
  // no error line at all
  const ends = messages.filter((m) => /^agent (exited with code|stopped|cancelled) /.test(m));
  expect(ends).toEqual(['agent exited with code 0']);
  expect(logs.filter((l) => l.level === 'error')).toEqual([]);
  // the second agent's work is in the worktree
  expect(fs.readFileSync(path.join(worktree, 'from-the-agent.txt'), 'utf8')).toBe(`written by ${secondPid}\n`);
  // the first try ended as a timed-out try does (Temporal would not take its completion anyway)
  expect(await firstTry).toEqual({ threw: 'CancelledFailure' });
});

test('a try that learns of its timeout only once the retry has killed its agent (its worker was paused) writes only the note', async () => {
  const paused = runs.bind(null, PAUSED_RUN_LOG);
  const { input, deps, first, firstTry, firstPid } = await firstTryRunning('paused', paused);
  // the retry kills the first agent; only then does the first try hear that Temporal timed it out (a worker resumed
  // after a pause learns both at once): its agent is gone, so it says nothing of going on (it may even have ended by
  // then, its note written, and it then returns as a taken-over try rather than a cancelled one)
  const faults: RunAgentDeps['faults'] = {
    'runAgent.beforeReset': async () => {
      await eventually(async () => !groupAlive(firstPid), 10_000, 20);
      first.cancel('NOT_FOUND', new ActivityCancellationDetails({ notFound: true }));
      await firstTry;
    },
  };
  const second: RunAgentResult = await activityTry(2).run(runAgent, { ...deps, db: otherWorkerDb, metrics: createMetrics(), faults }, input);
  expect(second.status).toBe('completed');
  const messages = (await logLines(input.processId)).map((l) => l.message);
  // no `the agent goes on` after the kill: the note alone says what became of the first run
  expect(messages.filter((m) => m.startsWith(TIMED_OUT))).toEqual([]);
  const kill = messages.indexOf(`previous agent run (pid ${firstPid}) was left by a lost worker; killing it and restarting`);
  const notes = messages.flatMap((m, i) => (m.startsWith(`activity attempt 1's agent (pid ${firstPid}) was taken over by a later try`) ? [i] : []));
  expect(notes).toHaveLength(1);
  expect(kill).toBeGreaterThanOrEqual(0);
  expect(kill).toBeLessThan(notes[0] as number);
  expect(messages.at(-1)).toBe('agent exited with code 0');
});

test("a try whose worker shuts down while its agent runs stops the agent without ending the run: the retry runs it again", async () => {
  const drained = runs.bind(null, DRAINED_RUN_LOG);
  const { input, deps, worktree, first, firstTry, firstPid } = await firstTryRunning('drained', drained);
  // the worker's grace period has ended: the SDK cancels its running activities so
  first.cancel('WORKER_SHUTDOWN', new ActivityCancellationDetails({ workerShutdown: true }));
  // the try fails (Temporal retries it), its agent stopped; the row is still the run's, running, naming that agent
  expect(await firstTry).toEqual({ threw: 'CancelledFailure' });
  expect(groupAlive(firstPid)).toBe(false);
  const between = await getProcess(stack.db, input.processId);
  expect({ status: between?.status, pid: between?.pid, error: between?.error }).toEqual({ status: 'running', pid: firstPid, error: null });

  // Temporal's retry (another worker, or this one restarted) runs the agent again
  const second: RunAgentResult = await activityTry(2).run(runAgent, { ...deps, db: otherWorkerDb, metrics: createMetrics() }, input);
  expect(second.status).toBe('completed');
  const [, secondPid] = drained() as [number, number];
  const row = await getProcess(stack.db, input.processId);
  expect({ status: row?.status, exitCode: row?.exit_code, error: row?.error, pid: row?.pid }).toEqual({ status: 'completed', exitCode: 0, error: null, pid: secondPid });
  expect(await endEvents(input.processId)).toEqual(['process_completed']);
  // the log says the worker shut down and the run goes on, not that it was cancelled or failed
  const logs = await logLines(input.processId);
  const messages = logs.map((l) => l.message);
  expect(messages).toEqual(
    expect.arrayContaining([
      `first run ${firstPid} works until it is killed`,
      'this worker shut down while the agent ran (its grace period ended): agent stopped (exit SIGTERM); a later try of this run starts it again',
      'agent run restarted (activity attempt 2)',
      `second run ${secondPid}`,
    ]),
  );
  expect(messages.filter((m) => /^agent (exited with code|stopped|cancelled) /.test(m))).toEqual(['agent exited with code 0']);
  expect(logs.filter((l) => l.level === 'error')).toEqual([]);
  expect(fs.readFileSync(path.join(worktree, 'from-the-agent.txt'), 'utf8')).toBe(`written by ${secondPid}\n`);
});
