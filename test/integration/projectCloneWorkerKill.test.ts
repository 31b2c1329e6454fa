/**
 * kill -9 of `armada worker` while it clones a project's repository (docs/task-service.md, "Managed clones"). The
 * remote is a real git smart-HTTP server on loopback (test/support/gitHttpServer.ts) that holds the clone's pack
 * request, so the worker is killed with `git clone` certainly under way: the refs read, `<id>.partial` made, the pack
 * awaited. Checked on disk, in the rows and over HTTP: nothing of that clone goes on after the worker (no git process
 * left writing into `<id>.partial`); the project stays `cloning`, not failed, while no worker runs; once a worker is
 * back the clone's next try makes it, `ready`, a working copy of the remote's branch with no `.partial` beside it,
 * and an attempt runs in it; the same create sent again (another name) clones too.
 *
 * Before: the worker's `git clone` ran in its process launcher (lib/process/launcher.ts), which on its parent's death
 * stopped the agents' process groups but not the commands it ran to completion, so the orphaned clone went on after
 * the worker, bound for `<id>.partial`: the directory the next try removes and clones into (two clones writing into
 * one directory when they overlap, or a leftover beside the finished clone when the orphan ends last). Seen here: the
 * orphan still ran 15 s after the kill.
 *
 * Also kill -9 of the one of two workers whose removal of a deleted project's clone is under way: the other removes it
 * within seconds (the removal's 15 s heartbeat timeout). Before session 53 the removal had no heartbeat timeout and the
 * lost try was retried only at its 10-minute start-to-close.
 */
import { type ChildProcess, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { managedClonePath } from '../../lib/projects/managedClones';
import { agentConfig, api } from '../support/attemptHelpers';
import { startHeldCloneRemote, type HeldCloneRemote } from '../support/heldCloneRemote';
import { processesNaming } from '../support/processes';
import { eventually, startTestStack, type TestStack } from '../support/harness';
import { spawnStackWorker } from '../support/workerProcess';
import { stopChild } from '../support/ownTemporal';
import { startTcpProxy, type TcpProxy } from '../support/tcpProxy';
import { temporal } from '@temporalio/proto';
import { removeProjectCloneWorkflowId } from '../../workflows/projectCloneMessages';

jest.setTimeout(300_000);


let stack: TestStack;
let remote: HeldCloneRemote | undefined;
let worker: ChildProcess | undefined;
let other: ChildProcess | undefined;
let pgProxy: TcpProxy | undefined;
let url: string;
let remoteHead: string;

beforeAll(async () => {
  remote = await startHeldCloneRemote('armada-clone-worker-kill-', { 'README.md': '# widgets\n', 'src/a.txt': 'a\n' });
  ({ url, remoteHead } = remote);
  // the lost try is timed out after 15 s without a beat instead of the default minute (the next try is what the test
  // waits for, not how long Temporal takes to notice)
  stack = await startTestStack({ services: ['task'], worker: false, file: { ...agentConfig(), projects: { cloneHeartbeatTimeoutMs: 15_000 } } });
  worker = await spawnStackWorker(stack);
}, 180_000);

afterAll(async () => {
  remote?.releaseFirst(); // a held pack request first (the test lets it go; one that failed early may not have)
  pgProxy?.setMode('forward');
  await stopChild(worker);
  await stopChild(other);
  await pgProxy?.close();
  await stack?.close();
  await remote?.close();
});


const killWorker = async (): Promise<void> => {
  const w = worker as ChildProcess;
  const exited = new Promise((r) => w.once('exit', r));
  w.kill('SIGKILL');
  await exited;
  worker = undefined;
};

async function repositoryOnceSettled(id: string, timeoutMs: number): Promise<{ status: string; error?: string }> {
  const h = api(stack);
  return eventually(async () => {
    const p = (await h.inject('GET', `/api/projects/${id}`)).json().data;
    return p.repository.status !== 'cloning' ? p.repository : undefined;
  }, timeoutMs, 250);
}

test('kill -9 of the worker mid-clone: no git left running after it, the project stays cloning; the next worker makes the clone, ready and usable; the create sent again clones too', async () => {
  const h = api(stack);
  const created = await h.inject('POST', '/api/projects', { name: 'widgets', repository: { url, branch: 'main' } });
  expect(created.statusCode).toBe(201);
  const id = created.json().data.id as string;
  expect(created.json().data.repository.status).toBe('cloning');
  const clone = managedClonePath(stack.config.home, id);
  const partial = `${clone}.partial`;

  // mid-clone: the refs read, the directory made, the pack awaited
  await eventually(async () => remote?.packRequests() === 1 && fs.existsSync(partial), 60_000, 50);
  const cloning = processesNaming(partial);
  expect(cloning.length).toBeGreaterThan(0);

  await killWorker();
  // what the worker was running stops with it (SIGTERM lets git remove its half-made directory and locks)
  await eventually(async () => processesNaming(partial).length === 0, 15_000, 100);
  // the remote answers now: nothing is there any more to take the pack
  remote?.releaseFirst();
  await new Promise((r) => setTimeout(r, 2000));
  expect(processesNaming(partial)).toEqual([]);
  expect(fs.existsSync(clone)).toBe(false);
  // no worker: the project waits, it is not failed
  expect((await h.inject('GET', `/api/projects/${id}`)).json().data.repository.status).toBe('cloning');

  worker = await spawnStackWorker(stack);
  // the clone activity's next try, once Temporal timed the lost one out (its heartbeat timeout, 15 s here)
  const settled = await repositoryOnceSettled(id, 180_000);
  expect(settled).toMatchObject({ status: 'ready' });
  expect(settled.error).toBeUndefined();
  expect(fs.readFileSync(path.join(clone, 'README.md'), 'utf8')).toBe('# widgets\n');
  expect(execFileSync('git', ['-C', clone, 'rev-parse', 'HEAD'], { encoding: 'utf8' }).trim()).toBe(remoteHead);
  expect(execFileSync('git', ['-C', clone, 'status', '--porcelain'], { encoding: 'utf8' })).toBe('');
  expect(execFileSync('git', ['-C', clone, 'fsck', '--no-progress'], { encoding: 'utf8' })).toBe('');
  expect(fs.existsSync(partial)).toBe(false);
  expect(fs.readdirSync(path.dirname(clone)).filter((n) => n.startsWith(id))).toEqual([id]);

  // usable: an attempt runs in a worktree of it
  const taskId = await h.task(id, 'NOOP in the clone');
  const { attemptId } = await h.start(taskId);
  expect((await h.until(attemptId, ['completed'], 90_000)).status).toBe('completed');

  // the same create sent again, under another name: cloned as well
  const again = await h.inject('POST', '/api/projects', { name: 'widgets again', repository: { url, branch: 'main' } });
  expect(again.statusCode).toBe(201);
  const againId = again.json().data.id as string;
  expect(await repositoryOnceSettled(againId, 60_000)).toMatchObject({ status: 'ready' });
  expect(fs.readFileSync(path.join(managedClonePath(stack.config.home, againId), 'README.md'), 'utf8')).toBe('# widgets\n');
  expect(remote?.packRequests()).toBeGreaterThanOrEqual(3);
});

test("kill -9 of the worker removing a deleted project's clone: the other worker removes it within seconds, not after the removal's 10-minute start-to-close", async () => {
  const h = api(stack);
  // two workers whose PostgreSQL is behind a proxy: held, it keeps the removal under way (its first statement
  // waiting) on whichever worker took it
  await stopChild(worker);
  const url = new URL(stack.dbUrl);
  pgProxy = await startTcpProxy(`${url.hostname}:${url.port}`);
  [url.hostname, url.port] = pgProxy.address.split(':') as [string, string];
  [worker, other] = await Promise.all([spawnStackWorker(stack, { databaseUrl: url.toString() }), spawnStackWorker(stack, { databaseUrl: url.toString() })]);
  const created = await h.inject('POST', '/api/projects', { name: 'deleted under a dying worker', repository: { url: remote?.url, branch: 'main' } });
  expect(created.statusCode).toBe(201);
  const id = created.json().data.id as string;
  expect(await repositoryOnceSettled(id, 60_000)).toMatchObject({ status: 'ready' });
  const clone = managedClonePath(stack.config.home, id);

  pgProxy.setMode('hold');
  const deleting = h.inject('DELETE', `/api/projects/${id}`);
  const handle = (await stack.temporal.client()).workflow.getHandle(removeProjectCloneWorkflowId(id));
  const identity = await eventually(async () => {
    const a = (await handle.describe().catch(() => undefined))?.raw.pendingActivities?.[0];
    return a?.state === temporal.api.enums.v1.PendingActivityState.PENDING_ACTIVITY_STATE_STARTED ? a.lastWorkerIdentity : undefined;
  }, 30_000, 50);
  const [dying, survivor] = identity?.endsWith(`-${worker?.pid}`) ? [worker, other] : [other, worker];
  expect(identity?.endsWith(`-${dying?.pid}`)).toBe(true);
  const exited = new Promise((r) => dying?.once('exit', r));
  dying?.kill('SIGKILL');
  await exited;
  [worker, other] = [survivor, undefined];
  const killedAt = Date.now();
  pgProxy.setMode('forward');
  expect(fs.existsSync(clone)).toBe(true);

  expect((await deleting).statusCode).toBe(200);
  // before: the lost try was timed out only at the 10-minute start-to-close (no heartbeat timeout), and the survivor's
  // janitor (hourly) had looked before the delete
  await eventually(async () => !fs.existsSync(clone), 60_000, 250);
  expect(Date.now() - killedAt).toBeLessThan(60_000);
  expect(await handle.result()).toBe('removed');
  expect(fs.readdirSync(path.dirname(clone)).filter((n) => n.includes(id))).toEqual([]);
});
