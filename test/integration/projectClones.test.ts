/**
 * A project created from a repository URL gets a managed clone in $ARMADA_HOME/repos/<id>. Deleting the project
 * removes that clone (never a repository of the user's), also while an attempt runs in a worktree of it, and also
 * when the process died between the row delete and the removal; a delete before the clone is made leaves none made.
 * Real git, real PostgreSQL, a real worker; every assertion is about the disk.
 */
import { execFileSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pruneOrphanClones } from '../../activities/git/cloneJanitor';
import type { RunningWorkers } from '../../workers/createWorker';
import { agentConfig, api, gitOut, recordHistory } from '../support/attemptHelpers';
import { eventually, logger, makeGitRepo, startStackWorkers, startTestStack, type TestStack } from '../support/harness';

jest.setTimeout(120_000);

let stack: TestStack;
let h: ReturnType<typeof api>;
let workers: RunningWorkers | undefined;

beforeAll(async () => {
  stack = await startTestStack({ services: ['task'], worker: true, file: agentConfig({ attempts: { heartbeatTimeoutMs: 5000, killGraceMs: 1000, deleteWaitMs: 5000 } }) });
  h = api(stack);
  workers = stack.workers;
});
afterAll(async () => {
  await workers?.stop();
  await stack.close();
});

const reposDir = () => path.join(stack.config.home, 'repos');
/** What $ARMADA_HOME/repos holds that names the project: the clone, a `.partial`, a claim. */
const entriesOf = (projectId: string) => (fs.existsSync(reposDir()) ? fs.readdirSync(reposDir()).filter((n) => n.includes(projectId)) : []);

/** A bare repository, as a remote would be: a project made from its file:// URL gets a managed clone. */
function bareRepo(): string {
  const bare = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-bare-'));
  execFileSync('git', ['clone', '-q', '--bare', makeGitRepo(), bare]);
  return bare;
}

async function createCloned(name: string): Promise<string> {
  const r = await h.inject('POST', '/api/projects', { name, repository: { url: `file://${bareRepo()}` } });
  if (r.statusCode !== 201) throw new Error(`project: ${r.statusCode} ${r.body}`);
  return r.json().data.id as string;
}

/** A project whose managed clone is made: its id and the clone's path. */
async function clonedProject(name: string): Promise<{ id: string; clone: string }> {
  const id = await createCloned(name);
  const ready = await eventually(async () => {
    const p = (await h.inject('GET', `/api/projects/${id}`)).json().data;
    return p.repository.status === 'ready' ? p : undefined;
  });
  expect(ready.git_repo_path).toBe(path.join(reposDir(), id));
  expect(fs.existsSync(path.join(ready.git_repo_path, 'README.md'))).toBe(true);
  return { id, clone: ready.git_repo_path as string };
}

async function restartWorker(): Promise<void> {
  await workers?.stop();
  workers = await startStackWorkers(stack);
}

test('DELETE removes the managed clone, also while an attempt runs in a worktree of it; a repository of the user is left alone', async () => {
  const cloned = await clonedProject(`cloned-${crypto.randomUUID()}`);
  const cloneWorkflow = (await stack.temporal.client()).workflow.getHandle(`project-clone:${cloned.id}`);
  expect(await cloneWorkflow.result()).toBe('ready');
  await recordHistory(stack, cloneWorkflow.workflowId, 'project-clone-ready');
  const taskId = await h.task(cloned.id, 'SLEEP while the project is deleted');
  const running = await h.start(taskId);
  const attempt = await eventually(async () => {
    const a = await h.attempt(running.attemptId);
    return a.status === 'running' && a.worktreePath && fs.existsSync(a.worktreePath) && a.processId ? a : undefined;
  }, 30_000, 100);
  expect(gitOut(cloned.clone, 'worktree', 'list')).toContain(attempt.worktreePath); // the worktree is linked into the clone

  const del = await h.inject('DELETE', `/api/projects/${cloned.id}`);
  expect(del.statusCode).toBe(200);
  expect(del.json().data).toMatchObject({ id: cloned.id, deleted: true, cleanup: 'done' });
  expect(fs.existsSync(attempt.worktreePath)).toBe(false);
  expect(fs.existsSync(cloned.clone)).toBe(false);
  expect(entriesOf(cloned.id)).toEqual([]); // no claim or partial copy left beside it
  const client = await stack.temporal.client();
  for (const [workflowId, name] of [
    [`project-clone-remove:${cloned.id}`, 'project-clone-removed-on-delete'],
    [`attempt-remove:${running.attemptId}`, 'attempt-removed-on-project-delete'],
  ]) {
    await client.workflow.getHandle(workflowId).result(); // the delete answered cleanup 'done': both have ended
    await recordHistory(stack, workflowId, name);
  }
  // the cancelled attempt's workflow brings nothing back
  await new Promise((r) => setTimeout(r, 1500));
  expect(fs.existsSync(cloned.clone)).toBe(false);

  // a project on the user's own repository: deleting it never touches the repository
  const own = await h.project();
  expect((await h.inject('DELETE', `/api/projects/${own.id}`)).statusCode).toBe(200);
  expect(gitOut(own.repo, 'log', '--oneline')).toContain('initial');
  expect(fs.readFileSync(path.join(own.repo, 'README.md'), 'utf8')).toContain('line 1');
});

test("a managed clone another project uses as its repository stays while that project exists; the janitor removes it after", async () => {
  const a = await clonedProject(`shared-${crypto.randomUUID()}`);
  // project B was made on A's clone (a local work tree, used in place)
  const b = await h.inject('POST', '/api/projects', { name: `on-a-${crypto.randomUUID()}`, repository: { url: a.clone } });
  expect(b.statusCode).toBe(201);
  expect(b.json().data.git_repo_path).toBe(a.clone);

  expect((await h.inject('DELETE', `/api/projects/${a.id}`)).statusCode).toBe(200);
  expect(gitOut(a.clone, 'log', '--oneline')).toContain('initial'); // B's repository
  expect((await h.inject('DELETE', `/api/projects/${b.json().data.id}`)).statusCode).toBe(200);
  expect(fs.existsSync(a.clone)).toBe(true); // not B's clone: B's delete leaves it to the janitor

  await restartWorker(); // the janitor's pass at a worker's start
  await eventually(async () => !fs.existsSync(a.clone), 30_000, 200);
  expect(entriesOf(a.id)).toEqual([]);
});

test('a delete before the clone is made: no clone is made afterwards', async () => {
  await workers?.stop(); // the clone workflow waits for a worker
  const id = await createCloned(`late-${crypto.randomUUID()}`);
  expect((await h.inject('GET', `/api/projects/${id}`)).json().data.repository.status).toBe('cloning');
  const del = await h.inject('DELETE', `/api/projects/${id}`);
  workers = await startStackWorkers(stack);
  expect(del.statusCode).toBe(200);
  expect(del.json().data).toMatchObject({ id, deleted: true, cleanup: 'pending' }); // no worker had done it yet

  const client = await stack.temporal.client();
  // the clone workflow found no row when it began, so cloned nothing (a delete while the clone runs finds the clone
  // made when the workflow records it, removes it and ends 'removed')
  const result = await client.workflow.getHandle(`project-clone:${id}`).result();
  expect(result).toBe('gone');
  await recordHistory(stack, `project-clone:${id}`, 'project-clone-deleted-before-clone');
  await eventually(async () => entriesOf(id).length === 0, 30_000, 200);
  expect(fs.existsSync(path.join(reposDir(), id))).toBe(false);
});

test('the process died between the row delete and the removal: the next worker start removes the clone, and only it', async () => {
  const gone = await clonedProject(`crashed-${crypto.randomUUID()}`);
  const kept = await clonedProject(`kept-${crypto.randomUUID()}`);
  // a repository of the user's that happens to sit in repos/ under an id-like name, used in place by a project
  const usersOwn = path.join(reposDir(), crypto.randomUUID());
  fs.renameSync(makeGitRepo(), usersOwn);
  const onUsersOwn = await h.inject('POST', '/api/projects', { name: `users-own-${crypto.randomUUID()}`, repository: { url: usersOwn } });
  expect(onUsersOwn.statusCode).toBe(201);
  // the row went, then the process died: nothing removed the clone
  await stack.db.query('DELETE FROM projects WHERE id = $1', [gone.id]);
  expect(fs.existsSync(gone.clone)).toBe(true);

  await restartWorker();
  // the removal renames the clone to its claim (.remove-<id>.…) and then deletes that: wait for both
  await eventually(async () => !fs.existsSync(gone.clone) && entriesOf(gone.id).length === 0, 30_000, 200);
  expect(gitOut(kept.clone, 'log', '--oneline')).toContain('initial');
  expect(gitOut(usersOwn, 'log', '--oneline')).toContain('initial');
});

describe('the clone janitor (pruneOrphanClones)', () => {
  const HOUR = 3600_000;
  const aged = (dir: string, ageMs: number) => {
    const t = new Date(Date.now() - ageMs);
    fs.utimesSync(dir, t, t);
    return dir;
  };
  const dirIn = (name: string, ageMs = 0) => {
    const dir = path.join(reposDir(), name);
    fs.mkdirSync(path.join(dir, '.git'), { recursive: true });
    return aged(dir, ageMs);
  };

  test('leftovers of removals and clones cut short go after their grace; live projects, young work and other names stay', async () => {
    const live = await clonedProject(`janitor-live-${crypto.randomUUID()}`);
    const gone = () => crypto.randomUUID();
    const oldClaim = dirIn(`.remove-${gone()}.4242-0badc0de`, HOUR); // a removal whose process died
    const youngClaim = dirIn(`.remove-${gone()}.4243-0badc0df`); // a removal in progress
    const oldPartial = dirIn(`${gone()}.partial`, 2 * HOUR); // a clone whose process died, its project deleted
    const youngPartial = dirIn(`${gone()}.partial`, 10 * 60_000); // may be a clone in progress
    const livePartial = dirIn(`${live.id}.partial`, 2 * HOUR); // its project exists: its clone workflow owns it
    const orphan = dirIn(gone());
    const notAnId = dirIn('my-notes', 2 * HOUR);
    const file = path.join(reposDir(), gone());
    fs.writeFileSync(file, 'not a directory');

    const result = await pruneOrphanClones({ db: stack.db, config: stack.config, logger: logger });

    expect(result.failed).toEqual([]);
    expect(result.removed.sort()).toEqual([oldClaim, oldPartial, orphan].sort());
    for (const d of [oldClaim, oldPartial, orphan]) expect(fs.existsSync(d)).toBe(false);
    for (const d of [youngClaim, youngPartial, livePartial, notAnId, file, live.clone]) expect(fs.existsSync(d)).toBe(true);
    expect(await pruneOrphanClones({ db: stack.db, config: stack.config, logger: logger })).toEqual({ removed: [], failed: [] });
    for (const d of [youngClaim, youngPartial, livePartial, notAnId, file]) fs.rmSync(d, { recursive: true, force: true });
  });
});
