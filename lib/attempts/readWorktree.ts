/**
 * Reads of an attempt's worktree on the host that holds it (its host queue), for API replicas on other hosts: the
 * diff (uncommitted and untracked changes included) and the container status. Read-only, so safe to retry.
 */
import { diffFingerprint, readAttemptDiff, type DiffSource } from './gitDiff';
import { worktreeStatus, type WorktreeStatus } from './gitInfo';

/** Temporal payloads are limited (2 MB by default): a larger diff is cut at the last file that fits. */
export const MAX_REMOTE_DIFF_BYTES = 1_500_000;

export type WorktreeRead =
  | { op: 'diff'; source: DiffSource; file?: string }
  | { op: 'fingerprint'; source: DiffSource }
  | { op: 'status'; worktreePath: string | null; baseBranch: string | null; baseCommit: string | null };

export type WorktreeReadResult =
  | { op: 'diff'; text: string; truncated: boolean }
  | { op: 'fingerprint'; fingerprint: string }
  | { op: 'status'; status: WorktreeStatus };

/** A diff cut to whole files within `max` bytes. */
export function cutDiff(text: string, max: number): { text: string; truncated: boolean } {
  if (Buffer.byteLength(text) <= max) return { text, truncated: false };
  const head = Buffer.from(text).subarray(0, max).toString('utf8');
  const lastFile = head.lastIndexOf('\ndiff --git ');
  return { text: lastFile > 0 ? head.slice(0, lastFile + 1) : '', truncated: true };
}

export async function readWorktree(request: WorktreeRead): Promise<WorktreeReadResult> {
  if (request.op === 'diff') return { op: 'diff', ...cutDiff(await readAttemptDiff(request.source, request.file), MAX_REMOTE_DIFF_BYTES) };
  if (request.op === 'fingerprint') return { op: 'fingerprint', fingerprint: await diffFingerprint(request.source) };
  return { op: 'status', status: await worktreeStatus(request.worktreePath, request.baseBranch, request.baseCommit) };
}
