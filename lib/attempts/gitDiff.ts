/**
 * Reads an attempt's diff from git: the worktree against the base commit (so uncommitted edits of a running agent
 * show too, untracked files as added), or base..branch in the repository once the worktree is gone.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { git } from '../git';

export interface DiffSource {
  worktreePath: string | null;
  repoPath: string | null;
  baseCommit: string | null;
  branch: string | null;
}

/** Unified diff text (optionally of one file, a path relative to the worktree already checked by the caller). */
export async function readAttemptDiff(src: DiffSource, file?: string): Promise<string> {
  if (!src.baseCommit) return '';
  const pathspec = file ? ['--', file] : [];
  if (src.worktreePath && fs.existsSync(src.worktreePath)) {
    const tracked = await git(src.worktreePath, ['diff', '--no-color', '--no-ext-diff', '-M', src.baseCommit, ...pathspec]);
    if (tracked.code !== 0) throw new Error(`git diff failed: ${tracked.stderr.trim()}`);
    const untracked = await git(src.worktreePath, ['ls-files', '--others', '--exclude-standard', '-z', ...pathspec]);
    let text = tracked.stdout;
    for (const f of untracked.stdout.split('\0').filter(Boolean)) {
      // --no-index exits 1 when files differ: that is the expected case
      const r = await git(src.worktreePath, ['diff', '--no-color', '--no-index', '--', '/dev/null', f]);
      text += r.stdout.replace(/^diff --git a\/\S+ b\//m, `diff --git a/${f} b/`).replace(/^\+\+\+ b\/.*$/m, `+++ b/${f}`);
    }
    return text;
  }
  if (src.repoPath && src.branch) {
    const has = await git(src.repoPath, ['rev-parse', '--verify', '--quiet', `refs/heads/${src.branch}`]);
    if (has.code !== 0) return '';
    const r = await git(src.repoPath, ['diff', '--no-color', '--no-ext-diff', '-M', src.baseCommit, src.branch, ...pathspec]);
    return r.code === 0 ? r.stdout : '';
  }
  return '';
}

/**
 * A cheap fingerprint of what `readAttemptDiff(src)` would return: HEAD, `git status` (untracked files included)
 * and the size and mtime of every file it lists; or the branch's commit once the worktree is gone. Equal
 * fingerprints mean an unchanged diff, so live diff streams read the diff only when this changes.
 */
export async function diffFingerprint(src: DiffSource): Promise<string> {
  const h = crypto.createHash('sha1').update(`${src.baseCommit}\0`);
  if (src.worktreePath && fs.existsSync(src.worktreePath)) {
    const [head, status] = await Promise.all([
      git(src.worktreePath, ['rev-parse', 'HEAD']),
      git(src.worktreePath, ['status', '--porcelain=v1', '-z', '--untracked-files=all', '--no-renames']),
    ]);
    h.update(`worktree\0${head.stdout}\0${status.stdout}\0`);
    for (const entry of status.stdout.split('\0').filter(Boolean)) {
      try {
        const st = fs.statSync(path.join(src.worktreePath, entry.slice(3)));
        h.update(`${st.size}:${st.mtimeMs}\0`);
      } catch {
        h.update('gone\0');
      }
    }
  } else if (src.repoPath && src.branch) {
    const ref = await git(src.repoPath, ['rev-parse', '--verify', '--quiet', `refs/heads/${src.branch}`]);
    h.update(`branch\0${ref.stdout}`);
  }
  return h.digest('hex');
}

/** A `file` query value as a worktree-relative path, or null when it would leave the worktree. */
export function safeRelativePath(root: string, file: string): string | null {
  if (file.includes('\0') || path.isAbsolute(file)) return null;
  const resolved = path.resolve(root, file);
  const rel = path.relative(root, resolved);
  if (!rel || rel.startsWith('..') || path.isAbsolute(rel)) return null;
  if (rel.split(path.sep).includes('.git')) return null;
  return rel;
}
