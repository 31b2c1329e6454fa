/**
 * A try of runAgent timed out by Temporal while its worker runs on (its heartbeats did not reach Temporal: a frozen
 * Temporal, as in the chaos soak's `temporal-freeze`; here the worker's Temporal connection goes through a TCP proxy
 * that silences it), whose retry goes to another worker process on the same host: the retry kills the agent it
 * finds running and starts it again. The try that ran the killed agent sees it exit at once; it must not record that
 * kill as the run's end. The attempt completes with the second run.
 *
 * Before: the retry killed the agent first and set the row's pid only when its own agent started, so the first try's
 * end record (fenced on the row's pid) still matched: the process row ended `failed` with `agent exited with code
 * SIGKILL` while the second agent ran on (here, on the old code; in the chaos soak the attempt ended failed too, and
 * its follower's log stream ended at 399 of 1,906 lines).
 */
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { env, eventually, startTestStack, type TestStack } from '../support/harness';
import { spawnStackWorker } from '../support/workerProcess';
import { agentConfig, api } from '../support/attemptHelpers';
import { startTcpProxy, type TcpProxy } from '../support/tcpProxy';

jest.setTimeout(240_000);

const runLogDir = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-takeover-race-'));
const RUN_LOG = path.join(runLogDir, 'runs.log');
// records its start, then works 40 s (long enough for the other worker to start and take the retry)
const RECORDER = 'echo "$$" >> "$RUN_LOG"; echo "agent started ($$)"; sleep 40; echo "written by $$" > from-the-agent.txt; echo end-slow';

let stack: TestStack;
let h: ReturnType<typeof api>;
let proxy: TcpProxy;
const workers: ChildProcess[] = [];

beforeAll(async () => {
  const base = agentConfig();
  // attempts.heartbeatTimeoutMs is 5 s here (agentConfig)
  stack = await startTestStack({ services: ['task'], worker: false, file: { ...base, agents: { ...base.agents, recorder: { command: ['bash', '-c', RECORDER], format: 'text', env: { RUN_LOG } } } } });
  h = api(stack);
  proxy = await startTcpProxy(env('ARMADA_TEST_TEMPORAL_ADDRESS'));
});
afterAll(async () => {
  proxy?.setMode('forward');
  for (const w of workers) if (w.exitCode === null && w.signalCode === null) w.kill('SIGKILL');
  await proxy?.close();
  await stack.close();
  fs.rmSync(runLogDir, { recursive: true, force: true });
});

const runs = () => (fs.existsSync(RUN_LOG) ? fs.readFileSync(RUN_LOG, 'utf8').split('\n').filter(Boolean) : []);

test('a timed-out try whose agent the retry on another worker kills does not record the kill: the attempt completes with the second run', async () => {
  const first = await spawnStackWorker(stack, { temporalAddress: proxy.address });
  workers.push(first);
  const p = await h.project();
  const taskId = await h.task(p.id, 'run under a worker Temporal stops hearing');
  const { attemptId, processId } = await h.start(taskId, 'recorder');
  await eventually(async () => runs().length === 1, 30_000, 100);

  // the first worker's connection goes silent both ways (its heartbeats no longer reach Temporal, and its waiting polls
  // get nothing, so the retry goes to the other worker); it runs on, and reaches PostgreSQL as before
  proxy.setMode('blackhole');
  workers.push(await spawnStackWorker(stack)); // the retry's worker, after the heartbeat timeout
  try {
    await eventually(async () => runs().length === 2, 60_000, 100);
  } finally {
    proxy.setMode('forward');
  }
  const a = await h.until(attemptId, ['completed', 'failed'], 90_000);
  const proc = (await h.inject('GET', `/api/processes/${processId}`)).json().data;
  const logs = (await h.inject('GET', `/api/processes/${processId}/logs`)).body.split('\n').filter(Boolean).map((l) => JSON.parse(l).message as string);
  expect({ attempt: a.status, error: a.error, process: proc.status, exitCode: proc.exitCode }).toEqual({ attempt: 'completed', error: null, process: 'completed', exitCode: 0 });
  expect(logs.some((m) => /previous agent run \(pid \d+\) was left by a lost worker and has been killed/.test(m))).toBe(true);
  expect(logs.filter((m) => m === 'end-slow')).toHaveLength(1);
});
