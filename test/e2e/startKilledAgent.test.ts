/**
 * kill -9 of `armada start` (the supervisor: API services, worker, embedded PostgreSQL and Temporal dev server) while
 * an attempt's agent runs, then `armada start` again on the same ARMADA_HOME and ports (startKilled.test.ts covers the
 * idle case). What must hold:
 * - the agent's process group is gone soon after the kill: the process launcher stops the groups it started when its
 *   parent dies (docs/operations.md, "The process launcher"), so no orphan goes on editing the worktree;
 * - the second start comes up on the same ports: it stops the PostgreSQL and Temporal the first one left (documented);
 * - the attempt does not stay `running`: after the heartbeat timeout the lost `runAgent` is retried by the new
 *   worker, which resets the worktree and runs the agent again (docs/attempts.md, "Worker killed"), and the attempt
 *   completes with one commit holding the agent's edit and nothing of the lost run;
 * - the process's log keeps every line stored before the kill, once and in place, followed by the re-run's lines;
 * - a new attempt on the task runs and completes.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { groupAlive } from '../../lib/process/processGroup';
import { SCRIPTED_AGENT, gitOut, readAgentJournal } from '../support/attemptHelpers';
import { eventually, makeGitRepo } from '../support/harness';
import { killProcessesUsing, processAlive, processesIn, processesUsing } from '../support/processes';
import { ctrlC, ctrlCWithin, serverPid, startArmada, type RunningArmada } from '../support/armadaStart';

jest.setTimeout(420_000);

const HEARTBEAT_MS = 10_000;
/** lines the agent prints before it goes quiet; all stored before the kill */
const LINES = 20;
/**
 * how soon after the supervisor's death its agent is gone: the launcher sees its parent go, sends SIGTERM, and SIGKILL
 * after the 1 s grace; generous for a loaded machine, and still far shorter than the lost run would work on (120 s)
 */
const AGENT_GONE_MS = 15_000;

let home: string;
let scratch: string;
let journal: string;
let last: RunningArmada | undefined;
/** the first run's agent, once known: killed in afterAll if a failed test left it */
let agentGroup: number | undefined;

beforeAll(() => {
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-start-killed-agent-'));
  scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-start-killed-journal-'));
  journal = path.join(scratch, 'journal');
  fs.writeFileSync(
    path.join(home, 'config.json'),
    JSON.stringify({
      agents: { quiet: { command: [process.execPath, SCRIPTED_AGENT], format: 'text', env: { ARMADA_TEST_JOURNAL: journal } } },
      attempts: { heartbeatTimeoutMs: HEARTBEAT_MS, killGraceMs: 1000 },
    }),
  );
});
afterAll(async () => {
  if (last) await ctrlCWithin(last, home, 60_000);
  // a test that failed after the kill -9 leaves the orphaned servers (and maybe the agent): not for the next file
  killProcessesUsing(home);
  if (agentGroup !== undefined && groupAlive(agentGroup)) process.kill(-agentGroup, 'SIGKILL');
  fs.rmSync(home, { recursive: true, force: true });
  fs.rmSync(scratch, { recursive: true, force: true });
});



async function call(port: number, method: 'GET' | 'POST', url: string, body?: unknown): Promise<{ status: number; data: Record<string, unknown> }> {
  const r = await fetch(`http://127.0.0.1:${port}${url}`, {
    method,
    ...(body === undefined ? {} : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
  });
  return { status: r.status, data: ((await r.json()) as { data?: Record<string, unknown> }).data ?? {} };
}

interface LogLine {
  seq: number;
  level: string;
  message: string;
}
async function logsOf(port: number, processId: string): Promise<LogLine[]> {
  const r = await fetch(`http://127.0.0.1:${port}/api/processes/${processId}/logs`);
  expect(r.status).toBe(200);
  return (await r.text())
    .split('\n')
    .filter(Boolean)
    .map((l) => {
      const { seq, level, message } = JSON.parse(l) as LogLine;
      return { seq, level, message };
    });
}

const untilEnded = (port: number, attemptId: string, timeoutMs: number) =>
  eventually(async () => {
    const a = await call(port, 'GET', `/api/attempts/${attemptId}`);
    return ['completed', 'failed', 'cancelled'].includes(a.data.status as string) ? a.data : undefined;
  }, timeoutMs, 250);

test('kill -9 of armada start while an agent runs: the agent goes with it; the next start re-runs the attempt to completed, its log whole and once; a new attempt works', async () => {
  const first = await startArmada(home);
  last = first;
  const port = first.ports.task;
  const repo = makeGitRepo();
  const project = await call(port, 'POST', '/api/projects', { name: 'agent across a kill -9', repository: { url: repo } });
  expect(project.status).toBe(201);
  const task = await call(port, 'POST', '/api/tasks', { projectId: project.data.id, title: 'work across a kill of the supervisor' });
  expect(task.status).toBe(201);
  const taskId = task.data.id as string;
  // the first run prints its lines, then works silently for 2 minutes (far past the kill); a re-run works 3 s
  const started = await call(port, 'POST', `/api/tasks/${taskId}/start`, { llm: 'quiet', description: `QUIET:120000:3000 LINES:${LINES}` });
  expect(started.status).toBe(200);
  const { attemptId, processId } = started.data as { attemptId: string; processId: string };

  // the agent runs and every line it printed is stored
  const agentPid = await eventually(async () => readAgentJournal(journal).find((l) => l.attemptId === attemptId && l.what === 'start')?.pid, 60_000, 100);
  agentGroup = agentPid; // the agent leads its own process group
  const before = await eventually(async () => {
    const logs = await logsOf(port, processId);
    return logs.some((l) => l.message === `line ${LINES} of ${LINES} from ${agentPid}`) ? logs : undefined;
  }, 30_000, 200);
  const worktree = (await call(port, 'GET', `/api/attempts/${attemptId}`)).data.worktreePath as string;
  expect(fs.existsSync(path.join(worktree, `partial-${agentPid}.txt`))).toBe(true);
  expect(groupAlive(agentPid)).toBe(true);

  const postgres = serverPid(home, 'postgres');
  const temporal = serverPid(home, 'temporal');
  process.kill(first.child.pid as number, 'SIGKILL');
  expect(await first.exited).toBeNull();

  // the agent's group goes with its supervisor: nothing of it works on in the worktree
  await eventually(async () => !groupAlive(agentPid), AGENT_GONE_MS, 100);
  expect(processesIn(worktree)).toEqual([]);
  const ticksAfterKill = readAgentJournal(journal).filter((l) => l.pid === agentPid).length;
  // the servers are orphans now, as documented
  expect([processAlive(postgres), processAlive(temporal)]).toEqual([true, true]);

  const second = await startArmada(home, {}, first.ports);
  last = second;
  expect(second.ports).toEqual(first.ports);
  expect([processAlive(postgres), processAlive(temporal)]).toEqual([false, false]);
  expect(readAgentJournal(journal).filter((l) => l.pid === agentPid)).toHaveLength(ticksAfterKill); // the lost run never wrote again

  // the lost run is retried after the heartbeat timeout and the attempt completes: never `running` for good
  const ended = await untilEnded(port, attemptId, HEARTBEAT_MS + 120_000);
  expect(ended.status).toBe('completed');

  // the agent ran twice, one after the other; the lost run never finished, the re-run did
  const runs = readAgentJournal(journal).filter((l) => l.attemptId === attemptId);
  const pids = [...new Set(runs.filter((l) => l.what === 'start').map((l) => l.pid))];
  expect(pids).toHaveLength(2);
  const [lost, rerun] = pids as [number, number];
  expect(lost).toBe(agentPid);
  expect(Math.max(...runs.filter((l) => l.pid === lost).map((l) => l.at))).toBeLessThan(Math.min(...runs.filter((l) => l.pid === rerun).map((l) => l.at)));
  expect(runs.filter((l) => l.what === 'end').map((l) => l.pid)).toEqual([rerun]);

  // the log: what was stored before the kill, unchanged and in place, then the re-run's lines, each once
  const after = await logsOf(port, processId);
  expect(after.slice(0, before.length)).toEqual(before);
  const seqs = after.map((l) => l.seq);
  expect(seqs).toEqual([...new Set(seqs)].sort((a, b) => a - b));
  const numbered = (pid: number) => after.filter((l) => l.message.endsWith(` from ${pid}`)).map((l) => l.message);
  const expected = (pid: number) => Array.from({ length: LINES }, (_, i) => `line ${i + 1} of ${LINES} from ${pid}`);
  expect(numbered(lost)).toEqual(expected(lost));
  expect(numbered(rerun)).toEqual(expected(rerun));
  expect(after.findIndex((l) => l.message === `line 1 of ${LINES} from ${rerun}`)).toBeGreaterThan(before.length - 1);
  expect(after.some((l) => l.level === 'warn' && /uncommitted changes of the lost run were discarded/.test(l.message))).toBe(true);

  // one commit on the branch with the agent's edit and nothing of the lost run; nobody left in the worktree
  const branch = (await call(port, 'GET', `/api/attempts/${attemptId}`)).data.branch as string;
  expect(gitOut(repo, 'rev-list', '--count', `main..${branch}`)).toBe('1');
  expect(gitOut(repo, 'diff', '--name-only', 'main', branch).split('\n').sort()).toEqual(['README.md', 'src/added.txt']);
  expect(processesIn(worktree)).toEqual([]);

  // a new attempt on the task works (no QUIET in its prompt: the default edit)
  const again = await call(port, 'POST', `/api/tasks/${taskId}/start`, { llm: 'quiet' });
  expect(again.status).toBe(200);
  expect((await untilEnded(port, again.data.attemptId as string, 60_000)).status).toBe('completed');

  expect(await ctrlC(second)).toBe(0);
  last = undefined;
  await eventually(async () => processesUsing(home).length === 0, 10_000, 200);
});
