/**
 * Reads of an attempt's worktree on the host that holds it (its host queue), for API replicas on other hosts: the
 * diff (uncommitted and untracked changes included) and the container status. Read-only, so safe to retry.
 */
import { fitDiff } from './diffFit';
import { diffFingerprint, readAttemptDiff, type DiffSource } from './gitDiff';
import { worktreeStatus, type WorktreeStatus } from './gitInfo';

/**
 * Temporal payloads are limited (2 MB by default): a diff read for another host is fitted within this, the files
 * that do not fit listed with their counts and without their lines (diffFit.ts). A read in place is not limited so.
 */
export const MAX_REMOTE_DIFF_BYTES = 1_500_000;

export type WorktreeRead =
  | { op: 'diff'; source: DiffSource; file?: string }
  | { op: 'fingerprint'; source: DiffSource }
  | { op: 'status'; worktreePath: string | null; baseBranch: string | null; baseCommit: string | null };

export type WorktreeReadResult =
  /** truncated: the diff does not fit even with every file omitted (an error for the reader; never shown as a diff) */
  | { op: 'diff'; text: string; truncated: boolean }
  | { op: 'fingerprint'; fingerprint: string }
  | { op: 'status'; status: WorktreeStatus };

/** Runs one read; `maxDiffBytes` (a read that travels to another host) fits the diff within that many bytes. */
export async function readWorktree(request: WorktreeRead, opts: { maxDiffBytes?: number } = {}): Promise<WorktreeReadResult> {
  if (request.op === 'diff') {
    const text = await readAttemptDiff(request.source, request.file);
    if (opts.maxDiffBytes === undefined) return { op: 'diff', text, truncated: false };
    const why = `not sent from the attempt's host: a diff read there for another host carries at most ${opts.maxDiffBytes / 1_000_000} MB`;
    return { op: 'diff', ...fitDiff(text, opts.maxDiffBytes, why) };
  }
  if (request.op === 'fingerprint') return { op: 'fingerprint', fingerprint: await diffFingerprint(request.source) };
  return { op: 'status', status: await worktreeStatus(request.worktreePath, request.baseBranch, request.baseCommit) };
}
