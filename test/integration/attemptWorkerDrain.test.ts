/**
 * A real `armada worker` drained (SIGTERM) past its grace period while an agent of it runs, with another worker of
 * the same host beside it: the drained worker stops the agent's process group and exits; its try's end is not the
 * run's, so the run is retried on the other worker (the agent run again from the last commit) and the attempt
 * completes there, never recorded cancelled; the run's log says once that the worker shut down.
 *
 * The activity-level test of the same (the try cancelled with WORKER_SHUTDOWN in Temporal's activity test
 * environment) is in attemptTakeoverRace.test.ts; this one goes through the worker's own drain (its signal handler,
 * the SDK's shutdown and grace period, the report of the cancelled try to Temporal and Temporal's retry). Before
 * session 47 the drained try recorded the run `cancelled`, the retry returned that and the attempt stayed `running`.
 *
 * The grace period is 1 s (`--grace 1`), the agent's first run works silently for ten minutes (it cannot end by
 * itself within the test) and its rerun for 1 s. No step is timed: each waits for a state, with deadlines far past
 * what a loaded 2-core machine needs.
 */
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { groupAlive } from '../../lib/process/processGroup';
import { SCRIPTED_AGENT, api, gitOut, readAgentJournal, workerIdentity } from '../support/attemptHelpers';
import { eventually, startTestStack, type TestStack } from '../support/harness';
import { spawnStackWorker } from '../support/workerProcess';

jest.setTimeout(300_000);

let stack: TestStack;
let h: ReturnType<typeof api>;
let journal: string;
const workers: ChildProcess[] = [];

beforeAll(async () => {
  journal = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'armada-drain-')), 'journal');
  stack = await startTestStack({
    services: ['task'],
    worker: false,
    file: {
      agents: { quiet: { command: [process.execPath, SCRIPTED_AGENT], format: 'text', env: { ARMADA_TEST_JOURNAL: journal } } },
      // a drained try's failure reaches Temporal with the worker's shutdown; the heartbeat timeout only bounds the
      // wait should that report be lost
      attempts: { heartbeatTimeoutMs: 10_000, killGraceMs: 1000 },
    },
  });
  h = api(stack);
}, 120_000);

afterAll(async () => {
  for (const w of workers) if (w.exitCode === null && w.signalCode === null) w.kill('SIGKILL');
  for (const pid of runPids()) {
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {
      /* gone */
    }
  }
  await stack?.close();
  if (journal) fs.rmSync(path.dirname(journal), { recursive: true, force: true });
});

const identityOf = workerIdentity;
const journalLines = () => readAgentJournal(journal);

const runPids = () => [...new Set(journalLines().map((l) => l.pid))];

interface ProcessRow {
  id: string;
  status: string;
  pid: number | null;
  exit_code: number | null;
  worker_identity: string | null;
}

test('SIGTERM of the worker running an agent, past its grace period: the agent is stopped, the run is retried on the other worker, the attempt completes', async () => {
  const started = await Promise.all([0, 1].map(() => spawnStackWorker(stack, { args: ['--grace', '1'], readyTimeoutMs: 120_000 })));
  workers.push(...started);
  const p = await h.project();
  const { attemptId, processId } = await h.start(await h.task(p.id, 'QUIET:600000:1000 drained worker'), 'quiet');

  // the agent runs: its pid and its worker recorded, its work begun
  const first = await eventually(async () => {
    const { rows } = await stack.db.query<ProcessRow>('SELECT id, status, pid, exit_code, worker_identity FROM processes WHERE attempt_id = $1', [attemptId]);
    const r = rows[0];
    return r?.pid && r.worker_identity && journalLines().some((l) => l.pid === r.pid && l.what === 'start') ? r : undefined;
  }, 90_000, 100);
  const firstPid = first.pid as number;
  const drained = started.find((w) => identityOf(w) === first.worker_identity) as ChildProcess;
  const other = started.find((w) => w !== drained) as ChildProcess;
  expect(drained).toBeDefined();

  // the drain: polling stops, the agent gets the grace period, then the try is cancelled and its agent stopped; the
  // worker then exits as a drained worker does
  const exited = new Promise<number | null>((resolve) => drained.once('exit', (code) => resolve(code)));
  drained.kill('SIGTERM');
  expect(await exited).toBe(0);
  expect(groupAlive(firstPid)).toBe(false);

  // the other worker runs the agent again and the attempt completes there
  const done = await h.until(attemptId, ['completed', 'failed', 'cancelled'], 180_000);
  expect(done.status).toBe('completed');
  const { rows } = await stack.db.query<ProcessRow>('SELECT id, status, pid, exit_code, worker_identity FROM processes WHERE attempt_id = $1', [attemptId]);
  expect(rows).toHaveLength(1);
  expect(rows[0]).toMatchObject({ id: processId, status: 'completed', exit_code: 0, worker_identity: identityOf(other) });
  expect(rows[0]?.pid).not.toBe(firstPid);
  expect((await h.inject('GET', `/api/processes/${processId}`)).json().data).toMatchObject({ status: 'completed', exitCode: 0, error: null });

  // never recorded cancelled: one completion, no cancel event, the process's one end its completion
  const events = async (topic: string) =>
    (await stack.db.query<{ type: string }>('SELECT type FROM events WHERE $1 = ANY(topics) ORDER BY seq', [topic])).rows.map((e) => e.type);
  const attemptEvents = await events(`attempt:${attemptId}`);
  expect(attemptEvents.filter((t) => t === 'attempt.completed')).toHaveLength(1);
  expect(attemptEvents.filter((t) => t === 'attempt.cancelled' || t === 'attempt.failed')).toEqual([]);
  expect((await events(`process:${processId}`)).filter((t) => ['process_completed', 'process_failed', 'process_stopped'].includes(t))).toEqual(['process_completed']);

  // the agent ran twice, one after the other; the first run never finished its work, the second did
  const lines = journalLines().filter((l) => l.attemptId === attemptId);
  const runs = [...new Set(lines.filter((l) => l.what === 'start').map((l) => l.pid))];
  expect(runs).toHaveLength(2);
  const [firstRun, secondRun] = runs as [number, number];
  expect(firstRun).toBe(firstPid);
  expect(Math.max(...lines.filter((l) => l.pid === firstRun).map((l) => l.at))).toBeLessThan(Math.min(...lines.filter((l) => l.pid === secondRun).map((l) => l.at)));
  expect(lines.filter((l) => l.what === 'end').map((l) => l.pid)).toEqual([secondRun]);

  // the log (through the API) says once that the worker shut down and the run goes on, then that it restarted, and
  // ends with the second run's end; nothing says cancelled or failed
  const logs = (await h.inject('GET', `/api/processes/${processId}/logs`)).body
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as { level: string; message: string });
  const messages = logs.map((l) => l.message);
  const shutdown = messages.flatMap((m, i) => (m.startsWith('this worker shut down while the agent ran (its grace period ended): agent stopped') ? [i] : []));
  expect(shutdown).toHaveLength(1);
  expect(messages[shutdown[0] as number]).toMatch(/^this worker shut down while the agent ran \(its grace period ended\): agent stopped \(exit SIG(TERM|KILL)\); a later try of this run starts it again$/);
  const restarted = messages.indexOf('agent run restarted (activity attempt 2)');
  expect(restarted).toBeGreaterThan(shutdown[0] as number);
  expect(messages.filter((m) => /^agent (exited with code|stopped|cancelled|timed out)/.test(m))).toEqual(['agent exited with code 0']);
  expect(messages.at(-1)).toBe('agent exited with code 0');
  expect(logs.filter((l) => l.level === 'error')).toEqual([]);

  // the branch: one commit with the agent's edit, nothing the first run left half done
  const attempt = await h.attempt(attemptId);
  expect(gitOut(p.repo, 'rev-list', '--count', `main..${attempt.branch}`)).toBe('1');
  expect(gitOut(p.repo, 'diff', '--name-only', 'main', attempt.branch).split('\n').sort()).toEqual(['README.md', 'src/added.txt']);
});
