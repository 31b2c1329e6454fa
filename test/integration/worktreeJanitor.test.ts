/** The worktree janitor: orphaned attempt worktrees pruned from $ARMADA_HOME/worktrees with real git and PostgreSQL. */
import { execFile } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { ArmadaConfig } from '../../lib/config';
import { createMetrics } from '../../lib/metrics';
import { pruneOrphanWorktrees } from '../../activities/git/worktreeJanitor';
import { startWorktreeJanitor } from '../../workers/worktreeJanitor';
import { ARMADA_BIN } from '../support/armadaProcess';
import { gitOk, gitOut } from '../support/attemptHelpers';
import { createTestDatabase, eventually, logger, makeGitRepo, startTestStack, testConfig } from '../support/harness';

jest.setTimeout(120_000);

let database: Awaited<ReturnType<typeof createTestDatabase>>;
let config: ArmadaConfig;
const repos: string[] = [];

beforeAll(async () => {
  database = await createTestDatabase();
});
afterAll(async () => {
  await database.drop();
  for (const r of repos) fs.rmSync(r, { recursive: true, force: true });
});
beforeEach(() => {
  config = testConfig(); // a fresh ARMADA_HOME (its own worktrees/) per test
});
afterEach(() => fs.rmSync(config.home, { recursive: true, force: true }));

const HOUR = 3600_000;

function repo(): string {
  const r = makeGitRepo();
  repos.push(r);
  gitOut(r, 'branch', 'feature'); // a branch of the user's that must survive every prune
  return r;
}

/** A project and a task row; attempt ids of the task are inserted by `attemptRow`. */
async function task(repoPath: string): Promise<string> {
  const projectId = crypto.randomUUID();
  const taskId = crypto.randomUUID();
  await database.pool.query(`INSERT INTO projects (id, name, repo_url, git_repo_path) VALUES ($1, $2, $3, $3)`, [projectId, `p-${projectId}`, repoPath]);
  await database.pool.query(`INSERT INTO tasks (id, project_id, title) VALUES ($1, $2, 'janitor')`, [taskId, projectId]);
  return taskId;
}

async function attemptRow(taskId: string, n: number, branch: string, id = crypto.randomUUID()): Promise<string> {
  await database.pool.query(`INSERT INTO attempts (id, task_id, number, llm, status, branch) VALUES ($1, $2, $3, 'test', 'completed', $4)`, [id, taskId, n, branch]);
  return id;
}

/** A worktree made the way prepareWorktree makes one (`git worktree add -b <branch> $ARMADA_HOME/worktrees/<id> main`). */
function worktree(repoPath: string, attemptId: string, branch: string, ageMs = HOUR): string {
  const dir = path.join(config.home, 'worktrees', attemptId);
  fs.mkdirSync(path.dirname(dir), { recursive: true });
  const exists = gitOk(repoPath, 'rev-parse', '--verify', '--quiet', `refs/heads/${branch}`);
  if (exists) gitOut(repoPath, 'worktree', 'add', dir, branch);
  else gitOut(repoPath, 'worktree', 'add', '-b', branch, dir, 'main');
  fs.writeFileSync(path.join(dir, 'work.txt'), 'uncommitted work of the agent\n');
  const t = new Date(Date.now() - ageMs);
  fs.utimesSync(dir, t, t);
  return dir;
}

const branches = (r: string) => gitOut(r, 'branch', '--list', '--format=%(refname:short)').split('\n').filter(Boolean).sort();
/** The repository's registered worktrees: the main one first, the others sorted (git lists them in no fixed order). */
const registered = (r: string) => {
  const [main, ...others] = gitOut(r, 'worktree', 'list', '--porcelain')
    .split('\n')
    .filter((l) => l.startsWith('worktree '))
    .map((l) => l.slice('worktree '.length));
  return [main, ...others.sort()];
};
const managed = (taskId: string, n: number) => `armada/task-${taskId}-attempt-${n}`;
const deps = () => ({ db: database.pool, config, logger });

describe('pruneOrphanWorktrees', () => {
  test('an orphan older than the grace goes with its registration and managed branch; live, young and foreign entries stay', async () => {
    const r = repo();
    const taskId = await task(r);
    const orphanId = await attemptRow(taskId, 1, managed(taskId, 1));
    const orphan = worktree(r, orphanId, managed(taskId, 1));
    await database.pool.query('DELETE FROM attempts WHERE id = $1', [orphanId]); // the task's attempt deleted after its workflow closed
    const liveId = await attemptRow(taskId, 2, managed(taskId, 2));
    const live = worktree(r, liveId, managed(taskId, 2), 48 * HOUR); // its row exists: its workflow's business, however old
    const youngId = crypto.randomUUID();
    const young = worktree(r, youngId, managed(taskId, 3), 60_000); // no row yet, 1 minute old: may be being created
    const foreign = path.join(config.home, 'worktrees', 'notes');
    fs.mkdirSync(foreign);
    fs.utimesSync(foreign, new Date(Date.now() - HOUR), new Date(Date.now() - HOUR));
    const metrics = createMetrics();

    const result = await pruneOrphanWorktrees({ ...deps(), metrics });

    expect(result).toEqual({
      pruned: [{ attemptId: orphanId, path: orphan, repository: r, branch: managed(taskId, 1), branchDeleted: true, dryRun: false }],
      failed: [],
    });
    expect(fs.existsSync(orphan)).toBe(false);
    expect(registered(r)).toEqual([fs.realpathSync(r), ...[live, young].map((p) => fs.realpathSync(p)).sort()]);
    expect(branches(r)).toEqual(['feature', 'main', managed(taskId, 2), managed(taskId, 3)].sort());
    expect(fs.readFileSync(path.join(live, 'work.txt'), 'utf8')).toContain('agent');
    expect(fs.existsSync(young) && fs.existsSync(foreign)).toBe(true);
    expect(fs.readdirSync(path.join(config.home, 'worktrees')).sort()).toEqual([liveId, youngId, 'notes'].sort()); // no claim left behind
    expect((await metrics.registry.getSingleMetricAsString('armada_worktrees_pruned_total')).trim().split('\n').pop()).toBe('armada_worktrees_pruned_total 1');

    expect(await pruneOrphanWorktrees(deps())).toEqual({ pruned: [], failed: [] }); // idempotent
  });

  test('an orphan whose repository was deleted: the directory is removed, nothing else to do', async () => {
    const r = makeGitRepo();
    const id = crypto.randomUUID();
    const dir = worktree(r, id, managed(crypto.randomUUID(), 1));
    fs.rmSync(r, { recursive: true, force: true });

    const result = await pruneOrphanWorktrees(deps());

    expect(result).toEqual({ pruned: [{ attemptId: id, path: dir, repository: null, branch: null, branchDeleted: false, dryRun: false }], failed: [] });
    expect(fs.existsSync(dir)).toBe(false);
  });

  test('a branch that is not managed, or that a live attempt names, is kept; the worktree goes', async () => {
    const r = repo();
    const taskId = await task(r);
    const own = crypto.randomUUID();
    const ownDir = worktree(r, own, 'my-experiment');
    // attempt 1 deleted, its number (and branch name) taken again by a newer attempt whose row exists
    const reusedBy = await attemptRow(taskId, 1, managed(taskId, 1));
    const stale = crypto.randomUUID();
    const staleDir = worktree(r, stale, managed(taskId, 1));

    const result = await pruneOrphanWorktrees(deps());

    expect(result.failed).toEqual([]);
    expect(result.pruned.map((p) => [p.attemptId, p.branch, p.branchDeleted]).sort()).toEqual(
      [
        [own, 'my-experiment', false],
        [stale, managed(taskId, 1), false],
      ].sort(),
    );
    expect(fs.existsSync(ownDir) || fs.existsSync(staleDir)).toBe(false);
    expect(registered(r)).toEqual([fs.realpathSync(r)]);
    expect(branches(r)).toEqual(['feature', 'main', managed(taskId, 1), 'my-experiment'].sort());
    expect(reusedBy).toBeTruthy();
  });

  test('a claim left by a janitor that died is finished; a directory holding a repository of its own is left alone', async () => {
    const r = repo();
    const id = crypto.randomUUID();
    const branch = managed(crypto.randomUUID(), 1);
    const dir = worktree(r, id, branch);
    const claim = path.join(config.home, 'worktrees', `.prune-${id}.4242-0badc0de`);
    fs.renameSync(dir, claim); // renamed, then the process was killed
    const t = new Date(Date.now() - HOUR);
    fs.utimesSync(claim, t, t);
    const clone = path.join(config.home, 'worktrees', crypto.randomUUID());
    gitOut(r, 'clone', '-q', r, clone);
    fs.utimesSync(clone, t, t);

    const result = await pruneOrphanWorktrees(deps());

    expect(result.pruned).toEqual([{ attemptId: id, path: dir, repository: r, branch, branchDeleted: true, dryRun: false }]);
    expect(result.failed).toEqual([{ attemptId: path.basename(clone), path: clone, error: expect.stringContaining('not a linked worktree') }]);
    expect(fs.existsSync(claim)).toBe(false);
    expect(fs.existsSync(path.join(clone, '.git'))).toBe(true);
    expect(branches(r)).toEqual(['feature', 'main']);
  });

  test('two janitors at once on the same host: each orphan is removed exactly once', async () => {
    const r = repo();
    const ids = Array.from({ length: 6 }, () => crypto.randomUUID());
    for (const [i, id] of ids.entries()) worktree(r, id, managed(ids[0] as string, i + 1));

    const [a, b] = await Promise.all([pruneOrphanWorktrees(deps()), pruneOrphanWorktrees(deps())]);

    expect([...a.failed, ...b.failed]).toEqual([]);
    expect([...a.pruned, ...b.pruned].map((p) => p.attemptId).sort()).toEqual([...ids].sort());
    expect(fs.readdirSync(path.join(config.home, 'worktrees'))).toEqual([]);
    expect(registered(r)).toEqual([fs.realpathSync(r)]);
    expect(branches(r)).toEqual(['feature', 'main']);
  });

  test("an orphan whose branch's ref a crashed git left locked: reported, nothing claimed or pruned; once the lock is gone the next pass removes worktree and branch", async () => {
    const r = repo();
    const id = crypto.randomUUID();
    const branch = managed(crypto.randomUUID(), 1);
    const dir = worktree(r, id, branch);
    const lock = path.join(r, '.git', 'refs', 'heads', `${branch}.lock`);
    fs.writeFileSync(lock, '');

    const refused = await pruneOrphanWorktrees(deps());

    expect(refused.pruned).toEqual([]);
    expect(refused.failed).toEqual([{ attemptId: id, path: dir, error: expect.stringContaining(`${lock} exists`) }]);
    // before: the directory was claimed and its registration pruned, so the next pass could not name the branch any
    // more and left it for good
    expect(fs.readFileSync(path.join(dir, 'work.txt'), 'utf8')).toContain('agent');
    expect(registered(r)).toEqual([fs.realpathSync(r), fs.realpathSync(dir)]);

    fs.rmSync(lock);
    const result = await pruneOrphanWorktrees(deps());
    expect(result).toEqual({ pruned: [{ attemptId: id, path: dir, repository: r, branch, branchDeleted: true, dryRun: false }], failed: [] });
    expect(registered(r)).toEqual([fs.realpathSync(r)]);
    expect(branches(r)).toEqual(['feature', 'main']);
  });

  test('an orphan locked with git worktree lock is left alone and reported; once unlocked the next pass removes it', async () => {
    const r = repo();
    const id = crypto.randomUUID();
    const branch = managed(crypto.randomUUID(), 1);
    const dir = worktree(r, id, branch);
    gitOut(r, 'worktree', 'lock', '--reason', 'on a removable disk', dir);

    const refused = await pruneOrphanWorktrees(deps());

    expect(refused.pruned).toEqual([]);
    expect(refused.failed).toEqual([{ attemptId: id, path: dir, error: expect.stringContaining('on a removable disk') }]);
    // before: its files were deleted while git kept the locked registration, and with it the branch
    expect(fs.readFileSync(path.join(dir, 'work.txt'), 'utf8')).toContain('agent');
    expect(branches(r)).toEqual(['feature', 'main', branch].sort());

    gitOut(r, 'worktree', 'unlock', dir);
    const result = await pruneOrphanWorktrees(deps());
    expect(result).toEqual({ pruned: [{ attemptId: id, path: dir, repository: r, branch, branchDeleted: true, dryRun: false }], failed: [] });
    expect(registered(r)).toEqual([fs.realpathSync(r)]);
    expect(branches(r)).toEqual(['feature', 'main']);
  });

  test('dry run lists without touching anything', async () => {
    const r = repo();
    const id = crypto.randomUUID();
    const dir = worktree(r, id, managed(crypto.randomUUID(), 1));
    const result = await pruneOrphanWorktrees(deps(), { dryRun: true });
    expect(result.pruned).toEqual([expect.objectContaining({ attemptId: id, path: dir, branchDeleted: true, dryRun: true })]);
    expect(fs.existsSync(path.join(dir, 'work.txt'))).toBe(true);
    expect(registered(r)).toHaveLength(2);
  });
});

describe('the janitor of a worker', () => {
  test('startWorktreeJanitor prunes at start and on its interval, and stops cleanly', async () => {
    const r = repo();
    const first = worktree(r, crypto.randomUUID(), managed(crypto.randomUUID(), 1));
    const janitor = startWorktreeJanitor(deps(), 200);
    await janitor.idle();
    expect(fs.existsSync(first)).toBe(false);
    const second = worktree(r, crypto.randomUUID(), managed(crypto.randomUUID(), 1));
    await eventually(async () => !fs.existsSync(second), 10_000);
    await janitor.stop();
    const third = worktree(r, crypto.randomUUID(), managed(crypto.randomUUID(), 1));
    await new Promise((res) => setTimeout(res, 500));
    expect(fs.existsSync(third)).toBe(true); // stopped: no more passes

    const off = startWorktreeJanitor(deps(), 0);
    await off.idle();
    expect(fs.existsSync(third)).toBe(true);
    await off.stop();
  });

  test('startWorkers runs it with attempts.janitorIntervalMs and counts on the worker registry', async () => {
    const stack = await startTestStack({ services: [], worker: true, file: { attempts: { janitorIntervalMs: 200 } } });
    try {
      const r = repo();
      const dir = path.join(stack.config.home, 'worktrees', crypto.randomUUID());
      fs.mkdirSync(path.dirname(dir), { recursive: true });
      gitOut(r, 'worktree', 'add', '-q', '-b', managed(crypto.randomUUID(), 1), dir, 'main');
      const t = new Date(Date.now() - HOUR);
      fs.utimesSync(dir, t, t);
      // the directory moves away (the claim) before the branch is deleted and the removal counted: wait for the count
      const count = async () => stack.metrics.registry.getSingleMetricAsString('armada_worktrees_pruned_total');
      await eventually(async () => (await count()).includes('armada_worktrees_pruned_total 1'), 10_000);
      expect(fs.existsSync(dir)).toBe(false);
      expect(branches(r)).toEqual(['feature', 'main']);
    } finally {
      await stack.close();
    }
  });
});

describe('armada worktrees prune (CLI)', () => {
  const cli = (args: string[], env: Record<string, string> = { DATABASE_URL: database.url }) =>
    new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
      execFile(
        process.execPath,
        [ARMADA_BIN, 'worktrees', ...args],
        { env: { ...process.env, ARMADA_HOME: config.home, ARMADA_CONFIG: config.configPath, ARMADA_LOG_LEVEL: 'warn', DATABASE_URL: '', ...env } },
        (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
      );
    });

  test('--dry-run lists without removing, then prune removes and prints JSON lines', async () => {
    const r = repo();
    const taskId = await task(r);
    const keptId = await attemptRow(taskId, 1, managed(taskId, 1));
    const kept = worktree(r, keptId, managed(taskId, 1));
    const orphans = [crypto.randomUUID(), crypto.randomUUID()];
    const dirs = orphans.map((id, i) => worktree(r, id, managed(taskId, i + 2)));

    const dry = await cli(['prune', '--dry-run']);
    expect([dry.code, dry.stderr]).toEqual([0, '']);
    const listed = dry.stdout.trim().split('\n').map((l) => JSON.parse(l));
    expect(listed.map((p) => p.attemptId).sort()).toEqual([...orphans].sort());
    expect(listed.every((p) => p.dryRun === true && p.branchDeleted === true && p.repository === r)).toBe(true);
    expect(dirs.every((d) => fs.existsSync(d))).toBe(true);
    expect(branches(r)).toHaveLength(5);

    const run = await cli(['prune']);
    expect([run.code, run.stderr]).toEqual([0, '']);
    const removed = run.stdout.trim().split('\n').map((l) => JSON.parse(l));
    expect(removed.map((p) => [p.attemptId, p.path, p.branch, p.branchDeleted, p.dryRun]).sort()).toEqual(
      orphans.map((id, i) => [id, dirs[i], managed(taskId, i + 2), true, false]).sort(),
    );
    expect(dirs.some((d) => fs.existsSync(d))).toBe(false);
    expect(fs.existsSync(kept)).toBe(true);
    expect(branches(r)).toEqual(['feature', 'main', managed(taskId, 1)].sort());

    const again = await cli(['prune']);
    expect([again.code, again.stdout]).toEqual([0, '']);
  });

  test('two prune processes at once (two workers sharing ARMADA_HOME): every orphan removed once, no failure', async () => {
    const r = repo();
    const ids = Array.from({ length: 12 }, () => crypto.randomUUID());
    for (const [i, id] of ids.entries()) worktree(r, id, managed(ids[0] as string, i + 1));

    const runs = await Promise.all([cli(['prune']), cli(['prune'])]);

    expect(runs.map((x) => [x.code, x.stderr])).toEqual([
      [0, ''],
      [0, ''],
    ]);
    const removed = runs.flatMap((x) => x.stdout.split('\n').filter(Boolean)).map((l) => JSON.parse(l).attemptId);
    expect(removed.sort()).toEqual([...ids].sort());
    expect(fs.readdirSync(path.join(config.home, 'worktrees'))).toEqual([]);
    expect(registered(r)).toEqual([fs.realpathSync(r)]);
    expect(branches(r)).toEqual(['feature', 'main']);
  });
  // its usage errors (and the one line without DATABASE_URL): test/e2e/cliArgs.test.ts, with the other commands'
});
