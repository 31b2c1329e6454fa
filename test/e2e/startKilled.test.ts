/**
 * kill -9 of `armada start` itself (the supervisor: the four API services and its worker), as the out-of-memory
 * killer or a `kill -9` does. Its own children (the process launcher, docs/operations.md) must not outlive it; the
 * embedded PostgreSQL and Temporal dev server are left running without their parent (documented: nothing runs to stop
 * them), and the next `armada start` on the same home and ports stops those orphans and starts its own, with the
 * data of the first (a project and a task answered 201 just before the kill), then Ctrl-C leaves nothing running.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { eventually, makeGitRepo } from '../support/harness';
import { killProcessesUsing, processAlive, processesUsing } from '../support/processes';
import { ctrlC, ctrlCWithin, serverPid, startArmada, type RunningArmada } from '../support/armadaStart';

jest.setTimeout(300_000);

let home: string;
let last: RunningArmada | undefined;

beforeAll(() => {
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-start-killed-'));
});
afterAll(async () => {
  if (last) await ctrlCWithin(last, home, 60_000);
  killProcessesUsing(home); // a test that failed after the kill -9 leaves the orphaned servers: not for the next file
  fs.rmSync(home, { recursive: true, force: true });
});

/** The children of `pid` now, from /proc. */
const childrenOf = (pid: number): number[] => {
  try {
    return fs.readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
};

async function post(port: number, url: string, body: unknown): Promise<{ status: number; id: string }> {
  const r = await fetch(`http://127.0.0.1:${port}${url}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { status: r.status, id: ((await r.json()) as { data?: { id: string } }).data?.id ?? '' };
}

test('kill -9 of armada start: its launcher goes with it; the next start stops the orphaned servers, keeps the data; Ctrl-C then leaves nothing', async () => {
  const first = await startArmada(home);
  last = first;
  const supervisor = first.child.pid as number;
  const project = await post(first.ports.task, '/api/projects', { name: 'kept across a kill -9', repository: { url: makeGitRepo() } });
  expect(project.status).toBe(201);
  const task = await post(first.ports.task, '/api/tasks', { projectId: project.id, title: 'answered just before the kill' });
  expect(task.status).toBe(201);

  const postgres = serverPid(home, 'postgres');
  const temporal = serverPid(home, 'temporal');
  // what armada itself started besides the two servers: the launcher (and nothing else, idle)
  const own = childrenOf(supervisor).filter((p) => p !== postgres && p !== temporal);
  expect(own.length).toBeGreaterThan(0);
  expect(own.every((p) => fs.readFileSync(`/proc/${p}/cmdline`, 'utf8').includes('launcher'))).toBe(true);

  process.kill(supervisor, 'SIGKILL');
  expect(await first.exited).toBeNull();
  await eventually(async () => own.every((p) => !processAlive(p)), 15_000, 100);
  // the servers are orphans now (nothing is left to stop them): they still run, holding the home's ports
  expect([processAlive(postgres), processAlive(temporal)]).toEqual([true, true]);

  const second = await startArmada(home, {}, first.ports);
  last = second;
  expect(second.ports).toEqual(first.ports); // the same ports: the orphans were stopped, not worked around
  expect([processAlive(postgres), processAlive(temporal)]).toEqual([false, false]);
  expect(serverPid(home, 'postgres')).not.toBe(postgres);
  expect(serverPid(home, 'temporal')).not.toBe(temporal);
  const tasks = await fetch(`http://127.0.0.1:${second.ports.task}/api/projects/${project.id}/tasks`);
  expect(tasks.status).toBe(200);
  expect(((await tasks.json()) as { data: { id: string; title: string }[] }).data.map((t) => [t.id, t.title])).toEqual([[task.id, 'answered just before the kill']]);

  expect(await ctrlC(second)).toBe(0);
  last = undefined;
  await eventually(async () => processesUsing(home).length === 0, 10_000, 200);
});
