/**
 * Agent runs are not bounded by `--concurrency`: a run holds a host-queue activity slot for as long as its agent runs,
 * so that queue has room for `--max-agents` (else 250) runs besides the shared concurrency. Before, a worker ran at
 * most `--concurrency` (20) agents at once and the rest waited in Temporal (bench/concurrentAttempts.ts at 200).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { RunningWorkers } from '../../workers/createWorker';
import { eventually, startStackWorkers, startTestStack, type TestStack } from '../support/harness';
import { api } from '../support/attemptHelpers';

const RUNS = 5;
let stack: TestStack;
let workers: RunningWorkers;
let h: ReturnType<typeof api>;
let dir: string;
let gate: string;
let holder: ChildProcess | undefined;

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-agent-runs-'));
  gate = path.join(dir, 'gate');
  fs.writeFileSync(gate, '');
  // every agent blocks on a shared lock that this test holds (in its own process group) until it lets go
  holder = spawn('flock', ['-x', gate, 'sleep', '600'], { detached: true, stdio: 'ignore' });
  const agent = 'cat >/dev/null; echo waiting; flock -s "$GATE" true; echo released';
  stack = await startTestStack({ services: ['task'], worker: false, file: { agents: { gated: { command: ['sh', '-c', agent], format: 'text', env: { GATE: gate } } } } });
  workers = await startStackWorkers(stack, { concurrency: 2 });
  h = api(stack);
});
afterAll(async () => {
  if (holder?.pid && holder.exitCode === null && holder.signalCode === null) process.kill(-holder.pid, 'SIGKILL');
  await workers.stop();
  await stack.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

test(`with --concurrency 2 a worker runs ${RUNS} agents at once, and all complete when they exit`, async () => {
  const p = await h.project();
  const started: { attemptId: string; processId: string }[] = [];
  for (let i = 0; i < RUNS; i++) started.push(await h.start(await h.task(p.id, `gated ${i}`), 'gated'));
  const processIds = started.map((s) => s.processId);
  await eventually(async () => {
    const { rows } = await stack.db.query<{ n: string }>(`SELECT count(*) AS n FROM processes WHERE id = ANY($1) AND status = 'running' AND pid > 0`, [processIds]);
    return Number(rows[0]?.n) === RUNS;
  }, 60_000, 250);
  // all five agent processes are alive at the same time, in /proc
  const { rows: pids } = await stack.db.query<{ pid: number }>('SELECT pid FROM processes WHERE id = ANY($1)', [processIds]);
  expect(pids.filter((r) => fs.existsSync(`/proc/${r.pid}`))).toHaveLength(RUNS);

  process.kill(-(holder?.pid as number), 'SIGKILL');
  for (const s of started) await h.until(s.attemptId, ['completed'], 60_000);
}, 150_000);
