/**
 * A worker paused (SIGSTOP) while its agent runs, for longer than the heartbeat timeout: Temporal times the try out
 * and schedules a retry of runAgent, which the same worker picks up once it is resumed (SIGCONT) while the first try
 * is still finishing in it. The agent finished during the pause: its run must not be started again and its work must
 * not be discarded (it was: `agent run restarted (activity attempt 2)`, `uncommitted changes of the lost run were
 * discarded`, a second agent run, and only the second run's file committed). Nor when the agent was still running at
 * the resume: the timed-out try used to stop it on Temporal's cancellation and the retry ran it again.
 */
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { temporal } from '@temporalio/proto';
import { groupAlive } from '../../lib/process/processGroup';
import { eventually, startTestStack, type TestStack } from '../support/harness';
import { spawnStackWorker } from '../support/workerProcess';
import { agentConfig, api, gitOut } from '../support/attemptHelpers';

const runLogDir = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-paused-runs-'));
/** one line per start of the agent, outside the worktree */
const RUN_LOG = path.join(runLogDir, 'runs.log');
// records its start, writes a file naming its run into the worktree, then works for 4 s (14 s when the prompt says LONGER)
const RECORDER =
  'echo "$$" >> "$RUN_LOG"; echo "agent started ($$)"; echo "written by run $$" > from-the-agent.txt; ' +
  'case "$ARMADA_PROMPT" in *LONGER*) s=14;; *) s=4;; esac; sleep $s; echo end-slow';

let stack: TestStack;
let h: ReturnType<typeof api>;
let worker: ChildProcess | undefined;

beforeAll(async () => {
  const base = agentConfig();
  // attempts.heartbeatTimeoutMs is 5 s here (agentConfig)
  stack = await startTestStack({
    services: ['task'],
    worker: false,
    file: { ...base, agents: { ...base.agents, recorder: { command: ['bash', '-c', RECORDER], format: 'text', env: { RUN_LOG } } } },
  });
  h = api(stack);
});
afterAll(async () => {
  if (worker && worker.exitCode === null && worker.signalCode === null) {
    worker.kill('SIGCONT');
    worker.kill('SIGKILL');
  }
  await stack.close();
  fs.rmSync(runLogDir, { recursive: true, force: true });
});

const runs = () => (fs.existsSync(RUN_LOG) ? fs.readFileSync(RUN_LOG, 'utf8').split('\n').filter(Boolean) : []);

/**
 * Starts an attempt of the recorder and pauses the worker once its agent runs, until Temporal has timed the try out
 * and handed the retry to the paused worker's waiting poll; resumes it before that retry's own heartbeat timeout.
 * Checks that the attempt completed, with one agent run whose file is in the attempt's commit.
 */
async function pausedRun(title: string, agentDoneBeforeResume: boolean) {
  fs.rmSync(RUN_LOG, { force: true });
  worker ??= await spawnStackWorker(stack);
  const p = await h.project();
  const taskId = await h.task(p.id, title);
  const { attemptId, processId } = await h.start(taskId, 'recorder');
  const pid = await eventually(async () => (await h.inject('GET', `/api/processes/${processId}`)).json().data.pid as number | null, 30_000);
  await eventually(async () => runs().length === 1, 10_000);

  worker.kill('SIGSTOP');
  try {
    // Temporal gave up on the first try (heartbeat timeout 5 s) and handed the retry to the paused worker's waiting
    // poll; it is resumed before that retry's own heartbeat timeout, and after the agent finished
    const handle = (await stack.temporal.client()).workflow.getHandle(`attempt:${attemptId}`);
    const retryStarted = async () =>
      ((await handle.describe()).raw.pendingActivities ?? []).some((a) => (a.attempt ?? 0) >= 2 && a.state === temporal.api.enums.v1.PendingActivityState.PENDING_ACTIVITY_STATE_STARTED);
    await eventually(retryStarted, 60_000, 200);
    expect(groupAlive(pid)).toBe(!agentDoneBeforeResume);
  } finally {
    worker.kill('SIGCONT');
  }

  const a = await h.until(attemptId, ['completed', 'failed'], 90_000);
  const logs = (await h.inject('GET', `/api/processes/${processId}/logs`)).body.split('\n').filter(Boolean).map((l) => JSON.parse(l).message as string);
  expect({ status: a.status, error: a.error, runs: runs().length }).toEqual({ status: 'completed', error: null, runs: 1 });
  expect(logs).toContain('end-slow');
  expect(logs.filter((m) => m === 'agent exited with code 0')).toHaveLength(1);
  expect(logs.some((m) => /discarded/.test(m))).toBe(false);
  // the only run's file is in the attempt's commit
  expect(gitOut(p.repo, 'show', `${a.branch}:from-the-agent.txt`)).toBe(`written by run ${runs()[0]}`);
  const proc = (await h.inject('GET', `/api/processes/${processId}`)).json().data;
  expect({ status: proc.status, exitCode: proc.exitCode }).toEqual({ status: 'completed', exitCode: 0 });
  // no line is stored after the run's end: the log streams end with the process, so a follower would never get it
  // (the retry's "the run of activity attempt 1 ended …; activity attempt 2 reports it" was; the chaos soak's followers)
  await new Promise((r) => setTimeout(r, 1000));
  const late = await stack.db.query('SELECT seq, message FROM process_logs l JOIN processes p ON p.id = l.process_id WHERE p.id = $1 AND l.ts > p.finished_at', [processId]);
  expect(late.rows).toEqual([]);
  return logs;
}

test('worker paused past the heartbeat timeout while its agent finishes: the agent ran once and its work is committed', async () => {
  // the retry either waits for the first try still recording the end, or finds that end recorded: either way one run
  await pausedRun('record the run under a paused worker', true);
}, 180_000);

test('worker resumed while its agent still runs: the timed-out try lets it finish, the retry takes its result', async () => {
  const logs = await pausedRun('record the LONGER run under a paused worker', false);
  expect(logs.some((m) => /activity attempt 2 waits for it/.test(m))).toBe(true);
}, 180_000);
