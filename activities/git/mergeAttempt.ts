/**
 * Merges an attempt branch into its base branch (ff / no-ff / squash). Conflicts and "nothing to merge" are
 * outcomes, not errors, and leave the base branch untouched: they are checked with `git merge-tree` before anything
 * is written.
 *
 * Idempotent under retries: before the base branch moves, the commit it will point at is recorded in a marker ref
 * `refs/armada/merges/<attemptId>/<branch head>`. A retry whose first try moved the base but lost its result finds
 * the marker reachable from the base and reports that same commit as merged, instead of `no_changes` (ff, no-ff) or
 * an empty second squash commit.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { git, gitOrThrow } from '../../lib/git';
import { faultPoint, type Faults } from '../../lib/faults';
import { earlierMerge, markerRef } from './mergeMarkers';
import { lockFileOf, lockStillThere, RepositoryLocked, repositoryLocked } from './gitLocks';
import { COMMIT_IDENTITY } from './commitWorktree';
import { withRepoLock } from './repoLock';
import { AppError } from '../../lib/errors';
import { diskFullCause } from '../../lib/fs/diskFull';
import { appErrorFailure } from '../../lib/temporal/appErrorFailure';
import type { MergeStrategy } from '../../lib/attempts/mergeStrategy';

export type MergeOutcome =
  | { ok: true; commitSha: string }
  | { ok: false; reason: 'no_changes' | 'conflict' | 'dirty_base' | 'missing_branch'; message: string; files: string[] };

async function identity(repo: string): Promise<string[]> {
  const r = await git(repo, ['config', 'user.email']);
  return r.code === 0 && r.stdout.trim() ? [] : COMMIT_IDENTITY;
}

/** The path of the work tree where `branch` is checked out, if any. */
async function checkedOutAt(repo: string, branch: string): Promise<string | null> {
  const list = await gitOrThrow(repo, ['worktree', 'list', '--porcelain']);
  let current: string | null = null;
  for (const line of list.split('\n')) {
    if (line.startsWith('worktree ')) current = line.slice(9);
    else if (line === `branch refs/heads/${branch}`) return current;
  }
  return null;
}

export interface MergeInput {
  repoPath: string;
  baseBranch: string;
  branch: string;
  strategy: MergeStrategy;
  message: string;
  /** Names the merge marker; without it (inputs of workflows started before markers existed) no marker is kept. */
  attemptId?: string;
}

/** Tries of one merge whose base branch moves under it (another merge, a push) before it is recomputed no more. */
const MERGE_TRIES = 5;

/** The base branch moved between the merge's read of it and its move: the merge is computed again on the new base. */
class BaseMoved extends Error {}

/**
 * Merges under the repository's lock (activities/git/worktree.ts), so this worker's merges into one base run one after
 * another; a base moved by anything else meanwhile (another worker, a push) is seen when the base is moved (a
 * compare-and-swap) and the merge is computed again on the new base. Before, concurrent merges of different attempts
 * built on the same base and the later ones failed with "Not possible to fast-forward" (500, the workflow failed).
 */
export async function mergeBranch(input: MergeInput, opts: { faults?: Faults } = {}): Promise<MergeOutcome> {
  try {
    return await withRepoLock(input.repoPath, async () => {
      for (let tries = 1; ; tries++) {
        try {
          return await mergeOnce(input, opts);
        } catch (err) {
          if (!(err instanceof BaseMoved) || tries >= MERGE_TRIES) throw err;
        }
      }
    });
  } catch (err) {
    // a lock file still there after a brief wait (lockStillThere's, or withRepoLock's for a lock git met itself):
    // a crashed git's, which no retry of ours removes
    const lockFile = lockFileOf(err);
    if (lockFile) throw repositoryLocked(input.repoPath, lockFile, 'merge again');
    // a full disk (git's words may not say so): the base is where it was (moveBase checks before it rethrows), and the
    // API answers 503 with what to do instead of a 500 after three tries
    const full = err instanceof Error ? diskFullCause(err, [input.repoPath]) : undefined;
    if (full) {
      throw appErrorFailure(
        new AppError(503, 'SERVICE_UNAVAILABLE', `Nothing was merged: ${full}: free space on it, then merge again (${(err as Error).message})`, { repository: input.repoPath }),
      );
    }
    throw err;
  }
}

async function mergeOnce(input: MergeInput, opts: { faults?: Faults }): Promise<MergeOutcome> {
  const { repoPath: repo, baseBranch: base, branch } = input;
  const attemptId = input.attemptId && /^[\w-]+$/.test(input.attemptId) ? input.attemptId : undefined;
  for (const b of [base, branch]) {
    if ((await git(repo, ['rev-parse', '--verify', '--quiet', `refs/heads/${b}`])).code !== 0) {
      return { ok: false, reason: 'missing_branch', message: `branch ${b} does not exist`, files: [] };
    }
  }
  const baseSha = (await gitOrThrow(repo, ['rev-parse', `refs/heads/${base}`])).trim();
  const branchSha = (await gitOrThrow(repo, ['rev-parse', `refs/heads/${branch}`])).trim();
  const earlier = attemptId ? await earlierMerge(repo, base, attemptId, branchSha) : null;
  if (earlier) return { ok: true, commitSha: earlier };
  const ahead = Number((await gitOrThrow(repo, ['rev-list', '--count', `${baseSha}..${branchSha}`])).trim());
  if (ahead === 0) return { ok: false, reason: 'no_changes', message: `${branch} has no commits that ${base} does not have`, files: [] };
  const tree = await git(repo, ['merge-tree', '--write-tree', '--name-only', '--no-messages', baseSha, branchSha]);
  if (tree.code === 1) {
    const files = tree.stdout.split('\n').slice(1).filter(Boolean);
    return { ok: false, reason: 'conflict', message: `merging ${branch} into ${base} conflicts`, files: [...new Set(files)] };
  }
  if (tree.code !== 0) throw new Error(`git merge-tree failed: ${tree.stderr.trim()}`);
  const mergedTree = (tree.stdout.split('\n')[0] ?? '').trim();
  // a squash whose changes the base already has (merged another way, or by another attempt) would be an empty commit
  if (input.strategy === 'squash' && mergedTree === (await gitOrThrow(repo, ['rev-parse', `${baseSha}^{tree}`])).trim()) {
    return { ok: false, reason: 'no_changes', message: `${base} already has every change of ${branch}`, files: [] };
  }
  const fastForward = (await git(repo, ['merge-base', '--is-ancestor', baseSha, branchSha])).code === 0;
  const id = await identity(repo);
  const message = input.message;

  let newSha: string;
  if (input.strategy === 'ff' && fastForward) newSha = branchSha;
  else if (input.strategy === 'squash') newSha = (await gitOrThrow(repo, [...id, 'commit-tree', mergedTree, '-p', baseSha, '-m', message])).trim();
  else newSha = (await gitOrThrow(repo, [...id, 'commit-tree', mergedTree, '-p', baseSha, '-p', branchSha, '-m', message])).trim();

  const moved = await moveBase(repo, base, baseSha, newSha, branch, attemptId && markerRef(attemptId, branchSha));
  if (moved) return moved;
  await faultPoint(opts.faults, 'mergeBranch.afterMerge', { commitSha: newSha });
  return { ok: true, commitSha: newSha };
}

/**
 * Moves `base` from baseSha to newSha, recording the marker first. When the base is checked out it moves with its
 * work tree, refusing to touch local edits (the dirty_base outcome is returned); undefined once moved.
 */
async function moveBase(repo: string, base: string, baseSha: string, newSha: string, branch: string, marker: string | undefined): Promise<MergeOutcome | undefined> {
  const worktree = await checkedOutAt(repo, base);
  let halfWritten: HalfWritten | undefined;
  if (worktree) {
    const dirty = await gitOrThrow(worktree, ['status', '--porcelain', '--untracked-files=no']);
    if (dirty.trim() && !(await leftByAnInterruptedMove(worktree, baseSha, newSha))) {
      halfWritten = await leftByAKilledCheckout(worktree, baseSha, newSha);
      if (!halfWritten) {
        const files = dirty.split('\n').filter(Boolean).map((l) => l.slice(3));
        return { ok: false, reason: 'dirty_base', message: `${base} has uncommitted changes in ${path.basename(worktree)}`, files };
      }
    } else if (!dirty.trim()) {
      // only new files of the merge written (git writes the removals first, then the files in path order): untracked,
      // so not dirty, but `merge --ff-only` would refuse to overwrite them
      halfWritten = await leftByAKilledCheckout(worktree, baseSha, newSha, { trackedClean: true });
    }
  }
  // a lock file in the way is seen before anything is written (a crashed git's stays: no retry helps). `merge
  // --ff-only` writes the work tree and the index before HEAD and the branch, and a lock of either found only then
  // would leave the base's checkout holding the merge, uncommitted, under the old HEAD
  const lock = await lockStillThere(worktree ?? repo, worktree ? ['index', 'HEAD', `refs/heads/${base}`] : [`refs/heads/${base}`]);
  if (lock) throw new RepositoryLocked(lock);
  if (marker) await gitOrThrow(repo, ['update-ref', marker, newSha]);
  try {
    if (worktree) {
      // the checked-out base moves with its work tree: only from the commit the merge was computed on
      if ((await gitOrThrow(worktree, ['rev-parse', 'HEAD'])).trim() !== baseSha) throw new BaseMoved(`${base} moved`);
      if (halfWritten) await putBack(worktree, halfWritten);
      await mergeIntoCheckout(worktree, baseSha, newSha);
    } else await gitOrThrow(repo, ['update-ref', '-m', `armada merge ${branch}`, `refs/heads/${base}`, newSha, baseSha]);
  } catch (err) {
    if (err instanceof BaseMoved) throw err;
    // a compare-and-swap that lost (update-ref's old value, or a fast-forward from a base that moved meanwhile)
    if ((await gitOrThrow(repo, ['rev-parse', `refs/heads/${base}`])).trim() !== baseSha) throw new BaseMoved(`${base} moved`);
    throw err;
  }
  return undefined;
}

/**
 * Whether the local changes of the base's checkout at `worktree` are what a `git merge --ff-only newSha` killed before
 * it moved HEAD left there (a worker killed with -9 during the merge, or the OOM killer): git writes the work tree and
 * the index first and moves the branch last, so a try of this merge lost there left the checkout holding the merge,
 * uncommitted, under the old HEAD. Before, the retry of the merge, and every merge after it, was refused as
 * `dirty_base` for changes nobody made but the merge itself. True when HEAD is still `baseSha` and every changed path
 * (staged or not) is one the merge changes, with exactly the content the merge gives it, in the index and in the work
 * tree: moving the base to `newSha` then changes nothing in the checkout (git takes such an index), and loses nothing,
 * whoever made those changes. Anything else (a path the merge does not touch, other content) is left to the user as
 * before: `dirty_base`; a checkout written only half-way, the index not yet, is leftByAKilledCheckout's.
 */
async function leftByAnInterruptedMove(worktree: string, baseSha: string, newSha: string): Promise<boolean> {
  if ((await git(worktree, ['rev-parse', 'HEAD'])).stdout.trim() !== baseSha) return false;
  const names = async (args: string[]) => (await gitOrThrow(worktree, ['diff', '--no-renames', '--name-only', '-z', ...args])).split('\0').filter(Boolean);
  const changed = [...new Set([...(await names(['--cached', baseSha])), ...(await names([]))])];
  if (changed.length === 0 || changed.length > 2000) return false; // (a checkout of thousands of changes: told as before)
  const merged = new Set(await names([baseSha, newSha]));
  if (!changed.every((f) => merged.has(f))) return false;
  // the same content as the merge's, in the index and in the work tree (exit 0: no difference)
  const same = async (args: string[]) => (await git(worktree, ['diff', '--quiet', '--no-renames', ...args, newSha, '--', ...changed.map((f) => `:(literal)${f}`)])).code === 0;
  return (await same(['--cached'])) && (await same([]));
}

/** What a merge killed while git wrote the checkout's files left there: its new files, and the tracked paths it wrote. */
interface HalfWritten {
  remove: string[];
  restore: string[];
}

/**
 * Whether the base's checkout at `worktree` holds what a `git merge --ff-only newSha` killed while it wrote the work
 * tree's files (kill -9 of the worker or of git, before git wrote the index and moved HEAD) left: some paths of the
 * merge written, the rest as they were. Before, the retry of the merge, and every merge after it, was refused as
 * `dirty_base` for files nobody but the merge had written. Only when HEAD is still `baseSha`, the index is still
 * `baseSha`'s, and every path that differs in the work tree (a tracked one changed or removed, or an untracked file
 * where the merge adds one) is one the merge changes and holds exactly what `newSha` has there, byte for byte and
 * mode included (or is gone where the merge removes it): putting those paths back as the index has them and merging
 * again then loses nothing, whoever wrote them. Anything else (a user's edit, even of one file; a file git was killed
 * while writing; filters, a file system without modes or symlinks) is undefined: left to the user as before. The same
 * holds for a merge commit (no-ff, squash): the checkout is always fast-forwarded to a commit on top of `baseSha`, and
 * a retry computes the same tree (git merge-tree of the same commits), so the paths are checked against its tree.
 */
async function leftByAKilledCheckout(worktree: string, baseSha: string, newSha: string, opts: { trackedClean?: boolean } = {}): Promise<HalfWritten | undefined> {
  // what the merge does to each path: `:<old mode> <new mode> <old id> <new id> <status>\0<path>\0`
  const raw = (await gitOrThrow(worktree, ['diff', '--raw', '-z', '--no-renames', '--no-abbrev', baseSha, newSha])).split('\0');
  const merge = new Map<string, { added: boolean; mode: string; id: string }>();
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const [oldMode, newMode, , newId] = (raw[i] ?? '').slice(1).split(' ');
    if (oldMode && newMode && newId) merge.set(raw[i + 1] ?? '', { added: /^0+$/.test(oldMode), mode: newMode, id: newId });
  }
  if (merge.size > 2000) return undefined; // (a merge of thousands of files: told as before)
  const remove = [...merge].filter(([f, m]) => m.added && onDisk(worktree, f, 'none') !== null).map(([f]) => f);
  // a checkout whose tracked files are clean (the caller's status said so) and that holds none of the merge's new
  // files was not written by a killed merge: one git command for every merge on a clean checkout, not four
  if (opts.trackedClean && remove.length === 0) return undefined;
  const restore = opts.trackedClean ? [] : (await gitOrThrow(worktree, ['diff', '--name-only', '-z', '--no-renames'])).split('\0').filter(Boolean);
  if (restore.length === 0 && remove.length === 0) return undefined; // nothing of the merge written
  if ((await git(worktree, ['rev-parse', 'HEAD'])).stdout.trim() !== baseSha) return undefined;
  if ((await git(worktree, ['diff', '--cached', '--quiet', baseSha])).code !== 0) return undefined; // the index moved too
  const algorithm = (await gitOrThrow(worktree, ['rev-parse', '--show-object-format'])).trim();
  for (const f of [...restore, ...remove]) {
    const m = merge.get(f);
    if (!m) return undefined; // a path the merge does not touch
    const have = onDisk(worktree, f, algorithm);
    const gone = /^0+$/.test(m.mode);
    if (gone ? have !== null : !have || have.mode !== m.mode || have.id !== m.id) return undefined;
  }
  return { remove, restore };
}

/** The mode and blob id of the file or symlink at `f` in `worktree` as git would store it; null when absent, false for anything else. */
function onDisk(worktree: string, f: string, algorithm: string): { mode: string; id: string } | null | false {
  const p = path.join(worktree, f);
  let st: fs.Stats;
  try {
    st = fs.lstatSync(p);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ENOENT' ? null : false;
  }
  if (algorithm !== 'sha1' && algorithm !== 'sha256') return false; // ('none': only whether something is there)
  let bytes: Buffer;
  let mode: string;
  try {
    if (st.isSymbolicLink()) [bytes, mode] = [fs.readlinkSync(p, { encoding: 'buffer' }), '120000'];
    else if (st.isFile()) [bytes, mode] = [fs.readFileSync(p), st.mode & 0o100 ? '100755' : '100644'];
    else return false;
  } catch {
    return false;
  }
  return { mode, id: createHash(algorithm).update(`blob ${bytes.length}\0`).update(bytes).digest('hex') };
}

/** Puts the paths a killed merge wrote back as the index has them (leftByAKilledCheckout checked them), for the merge to redo. */
async function putBack(worktree: string, half: HalfWritten): Promise<void> {
  for (const f of half.remove) fs.rmSync(path.join(worktree, f), { force: true });
  if (half.restore.length) await gitOrThrow(worktree, ['checkout', '-q', '--', ...half.restore.map((f) => `:(literal)${f}`)]);
}

/**
 * `git merge --ff-only newSha` in the base's checkout, which moves the work tree first and HEAD last: one whose writes
 * fail half-way (its disk full) leaves HEAD and the branch where they were but the checkout holding part of the merge:
 * files changed, new ones half-written. Those paths are put back as the base has them, so a refused merge leaves the
 * checkout as it was. Only the merge's own paths, and only after a failed write: git checks before it writes that none
 * of them has local changes (moveBase checked the checkout clean too) and that no new one is there untracked, and a
 * merge it refuses so has written nothing. Before, the merge answered that nothing was merged while the checkout held
 * half of it, and the next merge was refused for the base's uncommitted changes. What cannot be put back (the disk
 * still full) is added to the error, with what to do.
 */
async function mergeIntoCheckout(worktree: string, baseSha: string, newSha: string): Promise<void> {
  const changed = async (filter: string) => (await gitOrThrow(worktree, ['diff', '--no-renames', '--name-only', '-z', `--diff-filter=${filter}`, baseSha, newSha])).split('\0').filter(Boolean);
  const added = await changed('A');
  const present = (f: string) => {
    try {
      fs.lstatSync(path.join(worktree, f));
      return true;
    } catch {
      return false;
    }
  };
  const thereBefore = new Set(added.filter(present));
  const r = await git(worktree, ['merge', '--ff-only', '-q', newSha]);
  if (r.code === 0) return;
  const err = new Error(`git merge failed: ${r.stderr.trim() || r.stdout.trim() || `exit ${r.code}`}`);
  const wroteHalf = /unable to (write|create) file|No space left on device|Out of diskspace/i.test(r.stderr) || diskFullCause(err, [worktree]) !== undefined;
  if (!wroteHalf || (await git(worktree, ['rev-parse', 'HEAD'])).stdout.trim() !== baseSha) throw err;
  // the new files first: that frees room for the rest
  for (const f of added) if (!thereBefore.has(f)) fs.rmSync(path.join(worktree, f), { force: true });
  const others = await changed('a'); // every other change: modified, deleted, type changed
  const restore = others.length ? await git(worktree, ['checkout', '-q', baseSha, '--', ...others]) : { code: 0, stderr: '' };
  if (restore.code !== 0) {
    err.message += `; the checkout at ${worktree} may hold part of the merge, uncommitted: once the cause is cleared, run git -C ${worktree} checkout ${baseSha.slice(0, 12)} -- . (${restore.stderr.trim()})`;
  }
  throw err;
}
