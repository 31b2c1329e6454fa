/**
 * Two full `armada worker` processes on one host share the task queue and the host queue. Three attempts run a slow
 * agent that works silently (it prints nothing while it works, as an agent waiting on its model does, so a lost
 * worker's closed pipe does not stop it); the worker running one attempt's agent is killed (SIGKILL) mid-run.
 *
 * What must hold: the killed worker's agents die with it, before anything takes their runs over (the process launcher
 * stops the groups it started whose leader still runs when its worker goes away); after the heartbeat timeout the
 * other worker takes each lost run over, in the same worktree, from its last commit; and every attempt finishes
 * exactly once: one process row (completed, run by the surviving worker), one `attempt.completed` event, one commit on
 * its branch holding the agent's edit and nothing of the lost run, never two agents in one worktree at once, and no
 * agent left running afterwards. The re-run is what a user gets: the lost run's output and its half-done edits went
 * with its worker, so the run starts again (docs/attempts.md, "Worker killed").
 *
 * Before: a lost worker's agents ran on as orphans (their groups are detached) for the whole heartbeat timeout, editing
 * the worktree and spending the agent's budget with no one reading their output, until the retry on the other worker
 * killed them; with no worker of that host to retry, they ran to their end.
 *
 * The second test freezes (SIGSTOP) the worker running an agent instead, past the heartbeat timeout: the other worker
 * takes the run over, and the frozen try, resumed while the new run works, finds its agent killed and must not record
 * that end over the new run (before, the process row of the attempt that completed ended `failed`), nor write it into
 * the run's log as an end (until session 47, `agent exited with code SIGKILL` as an error line while the new run worked).
 * Its note comes after the other worker's line of the kill, in the order things happened (session 48).
 */
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { groupAlive } from '../../lib/process/processGroup';
import { SCRIPTED_AGENT, api, gitOut, readAgentJournal, workerIdentity } from '../support/attemptHelpers';
import { env, eventually, startTestStack, type TestStack } from '../support/harness';
import { processesIn } from '../support/processes';
import { startTcpProxy } from '../support/tcpProxy';
import { spawnStackWorker } from '../support/workerProcess';

jest.setTimeout(300_000);

const HEARTBEAT_MS = 15_000;
/** how long each agent run works: well past the kill plus LOST_AGENT_GONE_MS, so an orphan cannot pass for a dead agent by ending on its own */
const WORK_MS = 25_000;
/**
 * how soon after its worker's death a lost agent is gone: it gets SIGTERM at once and SIGKILL after its 2 s grace, but
 * the launcher noticing the death, the signals and the agents' exits (at nice 19) share the two cores with the quiet
 * phase's browser and contract tests; 6 s was missed there once (ci44c). Still well under the heartbeat
 * timeout, after which the other worker may take the runs over (the rows are checked right after).
 */
const LOST_AGENT_GONE_MS = 10_000;

let stack: TestStack;
let h: ReturnType<typeof api>;
let journal: string;
const workers: ChildProcess[] = [];

beforeAll(async () => {
  journal = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'armada-takeover-')), 'journal');
  stack = await startTestStack({
    services: ['task'],
    worker: false,
    file: {
      agents: { quiet: { command: [process.execPath, SCRIPTED_AGENT], format: 'text', env: { ARMADA_TEST_JOURNAL: journal } } },
      attempts: { heartbeatTimeoutMs: HEARTBEAT_MS, killGraceMs: 1000 },
    },
  });
  h = api(stack);
}, 120_000);

afterAll(async () => {
  for (const w of workers) if (w.exitCode === null && w.signalCode === null) w.kill('SIGKILL');
  await stack?.close();
  if (journal) fs.rmSync(path.dirname(journal), { recursive: true, force: true });
});

async function startWorkerProcess(temporalAddress?: string): Promise<ChildProcess> {
  const child = await spawnStackWorker(stack, { readyTimeoutMs: 120_000, temporalAddress });
  workers.push(child);
  return child;
}

const identityOf = workerIdentity;

interface ProcessRow {
  id: string;
  status: string;
  pid: number | null;
  exit_code: number | null;
  worker_identity: string | null;
}

async function processRows(attemptId: string): Promise<ProcessRow[]> {
  return (await stack.db.query<ProcessRow>('SELECT id, status, pid, exit_code, worker_identity FROM processes WHERE attempt_id = $1', [attemptId])).rows;
}

/** The journal's lines of one attempt's agent runs: pid, what, when. */
function journalOf(attemptId: string): { pid: number; what: string; at: number }[] {
  return readAgentJournal(journal)
    .filter((l) => l.attemptId === attemptId)
    .map(({ pid, what, at }) => ({ pid, what, at }));
}


test('kill -9 of one of two workers mid-run: its agents die with it, the other worker takes their runs over, every attempt completes once', async () => {
  const [w1, w2] = await Promise.all([startWorkerProcess(), startWorkerProcess()]);
  const p = await h.project();
  const attempts: { attemptId: string; processId: string }[] = [];
  for (let i = 1; i <= 3; i++) attempts.push(await h.start(await h.task(p.id, `QUIET:${WORK_MS} takeover ${i}`), 'quiet'));

  // every agent runs (its pid and its worker recorded) and has begun its work
  const running = await eventually(async () => {
    const rows = await Promise.all(attempts.map(async (a) => (await processRows(a.attemptId))[0]));
    if (!rows.every((r) => r?.pid && r.worker_identity)) return undefined;
    if (!attempts.every((a) => journalOf(a.attemptId).some((l) => l.what === 'start'))) return undefined;
    return rows as ProcessRow[];
  }, 60_000, 100);
  const victimIdentity = running[0]?.worker_identity as string;
  const [victim, survivor] = identityOf(w1) === victimIdentity ? [w1, w2] : [w2, w1];
  expect(identityOf(victim)).toBe(victimIdentity);
  const lost = attempts.filter((_, i) => running[i]?.worker_identity === victimIdentity);
  const lostPids = new Map(lost.map((a) => [a.attemptId, running[attempts.indexOf(a)]?.pid as number]));

  victim.kill('SIGKILL');
  await new Promise((r) => victim.once('exit', r));

  // the lost agents die with their worker: gone well before the heartbeat timeout lets the other worker take over,
  // and their rows still name the dead worker and the lost pid (nothing has taken the runs over yet)
  await eventually(async () => [...lostPids.values()].every((pid) => !groupAlive(pid)), LOST_AGENT_GONE_MS, 100);
  for (const a of lost) expect((await processRows(a.attemptId))[0]).toMatchObject({ status: 'running', pid: lostPids.get(a.attemptId), worker_identity: victimIdentity });

  for (const a of attempts) expect((await h.until(a.attemptId, ['completed', 'failed'], HEARTBEAT_MS + WORK_MS + 90_000)).status).toBe('completed');

  for (const a of attempts) {
    const wasLost = lostPids.has(a.attemptId);
    const attempt = await h.attempt(a.attemptId);
    // one process row, completed by the surviving worker (the lost run's retry reuses the row)
    const rows = await processRows(a.attemptId);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ id: a.processId, status: 'completed', exit_code: 0, worker_identity: identityOf(survivor) });
    if (wasLost) expect(rows[0]?.pid).not.toBe(lostPids.get(a.attemptId));
    // one completion
    const completed = await stack.db.query("SELECT 1 FROM events WHERE type = 'attempt.completed' AND $1 = ANY(topics)", [`attempt:${a.attemptId}`]);
    expect(completed.rowCount).toBe(1);
    // the agent ran once, or twice when its worker was lost; never two runs at once
    const lines = journalOf(a.attemptId);
    const runs = [...new Set(lines.filter((l) => l.what === 'start').map((l) => l.pid))];
    expect(runs).toHaveLength(wasLost ? 2 : 1);
    if (wasLost) {
      const [first, second] = runs as [number, number];
      expect(first).toBe(lostPids.get(a.attemptId));
      const firstLast = Math.max(...lines.filter((l) => l.pid === first).map((l) => l.at));
      const secondStart = Math.min(...lines.filter((l) => l.pid === second).map((l) => l.at));
      expect(firstLast).toBeLessThan(secondStart);
      expect(lines.some((l) => l.pid === first && l.what === 'end')).toBe(false); // the lost run never finished its work
      const logs = (await h.inject('GET', `/api/processes/${a.processId}/logs`)).body.split('\n').filter(Boolean).map((l) => JSON.parse(l) as { level: string; message: string });
      expect(logs.some((l) => l.level === 'warn' && /uncommitted changes of the lost run were discarded/.test(l.message))).toBe(true);
    }
    expect(lines.filter((l) => l.what === 'end')).toHaveLength(1);
    // the branch: one commit on the base with the agent's edit, nothing of the lost run
    expect(gitOut(p.repo, 'rev-list', '--count', `main..${attempt.branch}`)).toBe('1');
    expect(gitOut(p.repo, 'diff', '--name-only', 'main', attempt.branch).split('\n').sort()).toEqual(['README.md', 'src/added.txt']);
    expect(gitOut(p.repo, 'show', `${attempt.branch}:README.md`).split('\n').filter((l) => l === 'added by the agent')).toHaveLength(1);
    // no agent left running in its worktree
    expect(processesIn(attempt.worktreePath)).toEqual([]);
  }
});

test('one of two workers frozen (SIGSTOP) past the heartbeat timeout: the other takes the run over, and the frozen try, resumed, does not record its lost run over the new one', async () => {
  // two fresh workers, each reaching Temporal through a proxy of its own: the frozen one's connections are broken
  // while it is frozen (as a long VM pause ends them), so its open polls cannot be handed the retry, which then goes
  // to the other worker for sure (a poll left open on a frozen worker can take it: docs/attempts.md, "Worker paused")
  for (const w of workers) if (w.exitCode === null && w.signalCode === null) w.kill('SIGKILL');
  const proxies = await Promise.all([startTcpProxy(env('ARMADA_TEST_TEMPORAL_ADDRESS')), startTcpProxy(env('ARMADA_TEST_TEMPORAL_ADDRESS'))]);
  try {
    const live = await Promise.all(proxies.map((proxy) => startWorkerProcess(proxy.address)));
    const p = await h.project();
    // the first run works longer than the freeze lasts before the takeover; the run that takes over, 10 s
    const { attemptId, processId } = await h.start(await h.task(p.id, 'QUIET:60000:10000 frozen worker'), 'quiet');
    const first = await eventually(async () => {
      const r = (await processRows(attemptId))[0];
      return r?.pid && r.worker_identity && journalOf(attemptId).some((l) => l.what === 'start') ? r : undefined;
    }, 60_000, 100);
    const frozenAt = live.findIndex((w) => identityOf(w) === first.worker_identity);
    const frozen = live[frozenAt] as ChildProcess;
    const other = live[1 - frozenAt] as ChildProcess;
    frozen.kill('SIGSTOP');
    proxies[frozenAt]?.reset();
    let second: ProcessRow;
    try {
      // the other worker takes the run over: it stops the lost run's agent (its group is still the run's) and starts one
      second = await eventually(async () => {
        const r = (await processRows(attemptId))[0];
        return r && r.pid !== first.pid && r.worker_identity === identityOf(other) ? r : undefined;
      }, HEARTBEAT_MS + 60_000, 100);
      await eventually(async () => !groupAlive(first.pid as number), 10_000, 100);
      await eventually(async () => journalOf(attemptId).some((l) => l.pid === second.pid && l.what === 'start'), 30_000, 100);
    } finally {
      // resumed while the new run works: the frozen try finds its agent gone and comes to record its end
      frozen.kill('SIGCONT');
    }
    expect((await h.until(attemptId, ['completed', 'failed'], 90_000)).status).toBe('completed');
    // the resumed try has come to its end (its agent killed by the takeover): it says so in the run's log, its last
    // line, and nothing of its own after it
    const logsOf = async () => (await h.inject('GET', `/api/processes/${processId}/logs`)).body;
    await eventually(async () => (await logsOf()).includes(`agent (pid ${first.pid}) was taken over by a later try`), 60_000, 250);
    await new Promise((r) => setTimeout(r, 2000)); // and its end record, if any, right after it
    const rows = await processRows(attemptId);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ id: processId, status: 'completed', exit_code: 0, pid: second.pid, worker_identity: identityOf(other) });
    expect((await h.inject('GET', `/api/processes/${processId}`)).json().data).toMatchObject({ status: 'completed', exitCode: 0, error: null });
    const logs = await logsOf();
    expect(logs).toContain('agent exited with code 0');
    // the killed agent's end is not given as the run's (before, `agent exited with code SIGKILL` as an error mid-run)
    expect(logs).not.toContain('agent exited with code SIGKILL');
    expect(logs.split('\n').filter(Boolean).map((l) => JSON.parse(l) as { level: string }).filter((l) => l.level === 'error')).toEqual([]);
    // in the order things happened: the other worker's kill, then the resumed try's note; and no `Temporal timed this
    // try out …; the agent goes on` from the resumed try, whose agent was gone when it heard of its timeout (before
    // session 48 the kill's line came after the note, and a timeout's line, when written, just before it)
    const messages = logs.split('\n').filter(Boolean).map((l) => (JSON.parse(l) as { message: string }).message);
    const kill = messages.indexOf(`previous agent run (pid ${first.pid}) was left by a lost worker; killing it and restarting`);
    const notes = messages.flatMap((m, i) => (m.includes(`agent (pid ${first.pid}) was taken over by a later try`) ? [i] : []));
    expect(notes).toHaveLength(1);
    expect(kill).toBeGreaterThanOrEqual(0);
    expect(kill).toBeLessThan(notes[0] as number);
    expect(messages.filter((m) => m.startsWith('Temporal timed this try out'))).toEqual([]);
    const completed = await stack.db.query("SELECT 1 FROM events WHERE type = 'attempt.completed' AND $1 = ANY(topics)", [`attempt:${attemptId}`]);
    expect(completed.rowCount).toBe(1);
    const ended = await stack.db.query("SELECT type FROM events WHERE type IN ('process_completed', 'process_failed') AND $1 = ANY(topics)", [`process:${processId}`]);
    expect(ended.rows.map((r) => r.type)).toEqual(['process_completed']);
    const attempt = await h.attempt(attemptId);
    expect(gitOut(p.repo, 'rev-list', '--count', `main..${attempt.branch}`)).toBe('1');
    expect(gitOut(p.repo, 'diff', '--name-only', 'main', attempt.branch).split('\n').sort()).toEqual(['README.md', 'src/added.txt']);
  } finally {
    for (const proxy of proxies) await proxy.close();
  }
});
