/**
 * Prunes orphaned attempt worktrees: directories under $ARMADA_HOME/worktrees whose attempt row no longer exists
 * (task or project deleted after the attempt workflow had closed). Only uuid-named entries older than the grace are
 * considered; a worktree whose attempt row exists belongs to its workflow and is never touched.
 *
 * An orphan is claimed by renaming it to `.prune-<attemptId>.<pid>-<random>` (atomic: of two janitors on one host
 * only one wins), then, under the repository's lock, `git worktree prune` drops its registration, its managed
 * branch is deleted and so are its merge markers, and last the directory is removed. A claim left by a crash is
 * finished by a later pass.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { ArmadaConfig } from '../../lib/config';
import type { Queryable } from '../../lib/db/pool';
import { git, gitOrThrow } from '../../lib/git';
import type { Logger } from '../../lib/logger';
import { counter, type Metrics } from '../../lib/metrics';
import { withRepoLock } from './repoLock';
import { lockFileOf, lockStillThere } from './gitLocks';
import { removeMergeMarkers } from './mergeMarkers';
import { managedBranchPattern } from '../../lib/attempts/branchNames';
import { namesIn } from '../../lib/fs/namesIn';

/** Entries younger than this (by mtime) are left alone: a worktree may be being created before its row is visible. */
export const JANITOR_GRACE_MS = 10 * 60_000;

const UUID = '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}';
/** `<attemptId>`, or `.prune-<attemptId>.<pid>-<random>` (a claim). */
const ENTRY = new RegExp(`^(?:(${UUID})|\\.prune-(${UUID})\\.\\d+-[0-9a-f]+)$`);

export interface PrunedWorktree {
  attemptId: string;
  path: string;
  /** The repository the worktree was registered in; null when it is gone or unknown. */
  repository: string | null;
  /** The branch checked out in the worktree; null when detached or unknown. */
  branch: string | null;
  /** The branch was deleted (dry run: would be): a managed branch that no attempt row names. */
  branchDeleted: boolean;
  dryRun: boolean;
}

export interface PruneFailure {
  attemptId: string;
  path: string;
  error: string;
}

export interface PruneResult {
  pruned: PrunedWorktree[];
  failed: PruneFailure[];
}

export interface JanitorDeps {
  db: Queryable;
  config: Pick<ArmadaConfig, 'home' | 'branchPrefix'>;
  logger: Logger;
  /** Registry for armada_worktrees_pruned_total; absent in the CLI. */
  metrics?: Metrics;
}

export interface PruneOptions {
  /** Report what would be removed without removing anything. */
  dryRun?: boolean;
  graceMs?: number;
  /** Checked before each entry: a stopping worker finishes the current entry and leaves the rest for later. */
  shouldStop?: () => boolean;
}

interface WorktreeInfo {
  repository: string | null;
  branch: string | null;
  /** Locked with `git worktree lock`: its reason ('' without one). */
  locked?: string;
}

/** The repository (when it still exists), branch and lock of a linked worktree, from its `.git` file; read-only. */
async function inspectWorktree(dir: string): Promise<WorktreeInfo> {
  let text: string;
  try {
    text = fs.readFileSync(path.join(dir, '.git'), 'utf8');
  } catch {
    return { repository: null, branch: null }; // never became a worktree, or half removed
  }
  const m = /^gitdir:\s*(.+)$/m.exec(text);
  if (!m) return { repository: null, branch: null };
  const adminDir = path.resolve(dir, (m[1] as string).trim());
  let common: string | undefined;
  try {
    common = path.resolve(adminDir, fs.readFileSync(path.join(adminDir, 'commondir'), 'utf8').trim());
  } catch {
    common = /^(.*)[/\\]worktrees[/\\][^/\\]+$/.exec(adminDir)?.[1]; // the registration is gone: `<common>/worktrees/<name>`
  }
  if (!common || !fs.existsSync(path.join(common, 'HEAD'))) return { repository: null, branch: null };
  const repository = path.basename(common) === '.git' ? path.dirname(common) : common;
  let branch: string | null = null;
  let locked: string | undefined;
  if (fs.existsSync(adminDir)) {
    const r = await git(dir, ['symbolic-ref', '-q', '--short', 'HEAD'], { timeoutMs: 30_000 });
    if (r.code === 0 && r.stdout.trim()) branch = r.stdout.trim();
    try {
      locked = fs.readFileSync(path.join(adminDir, 'locked'), 'utf8').trim();
    } catch {
      // not locked
    }
  }
  return { repository, branch, ...(locked === undefined ? {} : { locked }) };
}

/**
 * Throws when git itself would not let the orphan go: a worktree locked with `git worktree lock` (git keeps its
 * registration, and with it its branch, whatever is done to its directory), or a lock file on its branch's ref
 * (another git writing it, or one that crashed). Asked before the claim, so nothing is touched and the next pass
 * finds the entry as it was, its branch still named by its registration; before, the claim went ahead, the files
 * of a locked worktree were deleted, and a branch whose delete a lock refused was never named again.
 */
async function assertRemovable(dir: string, info: WorktreeInfo, deletesBranch: boolean): Promise<void> {
  if (info.locked !== undefined) {
    throw new Error(
      `locked with git worktree lock${info.locked ? ` (${info.locked})` : ''}: left alone; git -C ${info.repository} worktree unlock ${dir} lets the janitor remove it`,
    );
  }
  if (!deletesBranch || !info.repository || !info.branch) return;
  const lock = await lockStillThere(info.repository, [`refs/heads/${info.branch}`, 'packed-refs']);
  if (lock) {
    throw new Error(
      `${lock} exists: another git process is running in ${info.repository}, or one crashed and left it behind, so the branch ${info.branch} cannot be deleted and nothing was removed. If no git process is running there, remove ${lock}; the next pass removes the worktree and branch`,
    );
  }
}

/** True when an attempt row names the branch (a later attempt with the same number reuses the name): not ours to delete. */
async function branchOwned(db: Queryable, branch: string): Promise<boolean> {
  const { rowCount } = await db.query('SELECT 1 FROM attempts WHERE branch = $1 LIMIT 1', [branch]);
  return Boolean(rowCount);
}

/** Throws when the entry holds a repository of its own (a `.git` directory): not something Armada made, left alone. */
function assertNotRepository(dir: string): void {
  let dotGit: fs.Stats;
  try {
    dotGit = fs.lstatSync(path.join(dir, '.git'));
  } catch {
    return;
  }
  if (!dotGit.isFile()) throw new Error('its .git is not a file (a repository, not a linked worktree): left alone');
}

interface Candidate {
  attemptId: string;
  dir: string;
}

/** The uuid-named entries (and earlier claims) older than the grace whose attempt row does not exist. */
async function findOrphans(deps: JanitorDeps, root: string, graceMs: number): Promise<Candidate[]> {
  const names = namesIn(root);
  const now = Date.now();
  const candidates: Candidate[] = [];
  for (const name of names) {
    const m = ENTRY.exec(name);
    if (!m) continue;
    const dir = path.join(root, name);
    let st: fs.Stats;
    try {
      st = fs.lstatSync(dir);
    } catch {
      continue; // removed meanwhile
    }
    if (!st.isDirectory() || now - st.mtimeMs < graceMs) continue;
    candidates.push({ attemptId: (m[1] ?? m[2]) as string, dir });
  }
  if (!candidates.length) return [];
  const { rows } = await deps.db.query<{ id: string }>('SELECT id FROM attempts WHERE id = ANY($1::text[])', [candidates.map((c) => c.attemptId)]);
  const live = new Set(rows.map((r) => r.id));
  return candidates.filter((c) => !live.has(c.attemptId));
}

/** Removes one orphan; undefined when another janitor claimed it first. */
async function pruneOne(deps: JanitorDeps, root: string, c: Candidate, dryRun: boolean): Promise<PrunedWorktree | undefined> {
  const managed = managedBranchPattern(deps.config.branchPrefix);
  const wouldDelete = async (info: WorktreeInfo) =>
    Boolean(info.repository && info.branch && managed.test(info.branch) && !(await branchOwned(deps.db, info.branch)));
  const reportedPath = path.join(root, c.attemptId);
  assertNotRepository(c.dir);
  // read before the claim: once the directory has moved, any `git worktree prune` (another janitor's) drops the
  // registration that names the branch
  const info = await inspectWorktree(c.dir);
  const deletesBranch = await wouldDelete(info);
  await assertRemovable(c.dir, info, deletesBranch);
  const seen = { repository: info.repository, branch: info.branch };
  if (dryRun) return { attemptId: c.attemptId, path: reportedPath, ...seen, branchDeleted: deletesBranch, dryRun };
  const claimed = path.join(root, `.prune-${c.attemptId}.${process.pid}-${crypto.randomBytes(4).toString('hex')}`);
  try {
    fs.renameSync(c.dir, claimed);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  const now = new Date();
  fs.utimesSync(claimed, now, now); // a claim being worked on is young to other janitors
  let branchDeleted = false;
  if (info.repository) {
    const repo = info.repository;
    await withRepoLock(repo, async () => {
      await gitOrThrow(repo, ['worktree', 'prune']); // the directory moved away, so git drops its registration
      if (info.branch && deletesBranch) {
        const r = await git(repo, ['branch', '-D', info.branch]);
        if (r.code === 0) branchDeleted = true;
        else if (lockFileOf(r.stderr)) throw new Error(`git branch -D failed: ${r.stderr.trim()}`); // retried by the lock
        else if (!/not found/i.test(r.stderr)) deps.logger.warn({ attemptId: c.attemptId, branch: info.branch, stderr: r.stderr.trim() }, 'orphaned worktree branch kept');
      }
      // the attempt's row is gone, so no delete removes its markers any more (the id is its own: no other attempt's)
      await removeMergeMarkers(repo, c.attemptId).catch((err: Error) => {
        if (lockFileOf(err)) throw err; // retried by the lock; then this entry fails, and a later pass finishes the claim
        deps.logger.warn({ attemptId: c.attemptId, repository: repo, err: { message: err.message } }, 'orphaned attempt merge markers kept');
      });
    });
  }
  await fs.promises.rm(claimed, { recursive: true, force: true });
  return { attemptId: c.attemptId, path: reportedPath, ...seen, branchDeleted, dryRun };
}

/** One pass over $ARMADA_HOME/worktrees: removes (or, dry run, lists) orphaned worktrees; a failed entry is skipped. */
export async function pruneOrphanWorktrees(deps: JanitorDeps, opts: PruneOptions = {}): Promise<PruneResult> {
  const root = path.join(deps.config.home, 'worktrees');
  const dryRun = opts.dryRun ?? false;
  const result: PruneResult = { pruned: [], failed: [] };
  const pruned = deps.metrics && counter(deps.metrics.registry, 'armada_worktrees_pruned_total', 'orphaned attempt worktrees removed by the worktree janitor');
  for (const c of await findOrphans(deps, root, opts.graceMs ?? JANITOR_GRACE_MS)) {
    if (opts.shouldStop?.()) break;
    try {
      const p = await pruneOne(deps, root, c, dryRun);
      if (!p) continue;
      result.pruned.push(p);
      if (!dryRun) {
        pruned?.inc();
        deps.logger.info({ attemptId: p.attemptId, path: p.path, branch: p.branch, branchDeleted: p.branchDeleted, repository: p.repository }, 'orphaned worktree removed');
      }
    } catch (err) {
      const error = (err as Error).message;
      result.failed.push({ attemptId: c.attemptId, path: c.dir, error });
      deps.logger.warn({ attemptId: c.attemptId, path: c.dir, err: { message: error } }, 'orphaned worktree not removed');
    }
  }
  return result;
}
