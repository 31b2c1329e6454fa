/**
 * kill -9 of `armada worker` mid-clone with `ARMADA_LAUNCHER=off` (docs/operations.md, "The process launcher"): the
 * worker's `git clone` is its own child then, and nothing stops it at the kill. The next worker stops it when it
 * starts (the command carries its owner, `ARMADA_COMMAND_OWNER`, and that owner is gone: lib/process/orphans.ts),
 * before the clone activity's retry removes `<id>.partial` and clones into it; the retry makes the clone, `ready`,
 * a working copy of the remote's branch with nothing beside it. The remote is a real git smart-HTTP server on
 * loopback that holds the first pack request, so the worker is killed with the clone certainly under way.
 * (With the launcher on: test/integration/projectCloneWorkerKill.test.ts.) Before session 51 the orphan went on
 * after the worker, bound for the directory the retry cloned into.
 */
import { type ChildProcess, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { managedClonePath } from '../../lib/projects/managedClones';
import { OWNER_VARIABLE } from '../../lib/process/orphans';
import { agentConfig, api } from '../support/attemptHelpers';
import { startHeldCloneRemote, type HeldCloneRemote } from '../support/heldCloneRemote';
import { processesNaming } from '../support/processes';
import { eventually, startTestStack, type TestStack } from '../support/harness';
import { spawnStackWorker } from '../support/workerProcess';
import { stopChild } from '../support/ownTemporal';

jest.setTimeout(300_000);

const OFF = { ARMADA_LAUNCHER: 'off' };

let stack: TestStack;
let remote: HeldCloneRemote | undefined;
let worker: ChildProcess | undefined;
let url: string;
let remoteHead: string;

beforeAll(async () => {
  remote = await startHeldCloneRemote('armada-clone-kill-off-', { 'README.md': '# widgets\n' });
  ({ url, remoteHead } = remote);
  stack = await startTestStack({ services: ['task'], worker: false, file: agentConfig() });
  worker = await spawnStackWorker(stack, { env: OFF });
}, 180_000);

afterAll(async () => {
  remote?.releaseFirst(); // a held pack request first (the test lets it go; one that failed early may not have)
  await stopChild(worker);
  await stack?.close();
  await remote?.close();
});


test('ARMADA_LAUNCHER=off, kill -9 mid-clone: the orphaned git clone is stopped by the next worker at its start, and the retry makes the clone', async () => {
  const h = api(stack);
  const created = await h.inject('POST', '/api/projects', { name: 'widgets', repository: { url, branch: 'main' } });
  expect(created.statusCode).toBe(201);
  const id = created.json().data.id as string;
  const clone = managedClonePath(stack.config.home, id);
  const partial = `${clone}.partial`;

  await eventually(async () => remote?.packRequests() === 1 && fs.existsSync(partial), 60_000, 50);
  const cloning = processesNaming(partial);
  expect(cloning.length).toBeGreaterThan(0);
  const w = worker as ChildProcess;
  // the worker's own children (no launcher), each naming the worker as its owner
  for (const pid of cloning) expect(fs.readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0').some((e) => e.startsWith(`${OWNER_VARIABLE}=${w.pid}:`))).toBe(true);

  const exited = new Promise((r) => w.once('exit', r));
  w.kill('SIGKILL');
  await exited;
  worker = undefined;
  // without the launcher nothing stops it at the kill (a worker another test file starts meanwhile would: it is an
  // orphan, so it is not asserted to run on)

  // the next worker stops it when it starts, long before the activity's retry (its heartbeat timeout, 1 minute)
  worker = await spawnStackWorker(stack, { env: OFF });
  await eventually(async () => processesNaming(partial).length === 0, 15_000, 100);
  // the remote answers now: nothing is left to take the pack
  remote?.releaseFirst();
  await new Promise((r) => setTimeout(r, 1000));
  expect(processesNaming(partial)).toEqual([]);
  expect(fs.existsSync(clone)).toBe(false);

  const settled = await eventually(async () => {
    const p = (await h.inject('GET', `/api/projects/${id}`)).json().data;
    return p.repository.status !== 'cloning' ? p.repository : undefined;
  }, 180_000, 250);
  expect(settled).toMatchObject({ status: 'ready' });
  expect(execFileSync('git', ['-C', clone, 'rev-parse', 'HEAD'], { encoding: 'utf8' }).trim()).toBe(remoteHead);
  expect(execFileSync('git', ['-C', clone, 'status', '--porcelain'], { encoding: 'utf8' })).toBe('');
  expect(fs.readdirSync(path.dirname(clone)).filter((n) => n.startsWith(id))).toEqual([id]);
});
