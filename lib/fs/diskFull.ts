/**
 * Whether a failed write (git's, or the worker's own) was refused for want of disk space, and on which disk. git does
 * not always say so: a checkout on a full disk prints `error: unable to write file README.md`, a branch it cannot
 * create `fatal: cannot update ref 'refs/heads/…': couldn't write '….lock'`, with no reason. So the disks themselves
 * are asked as well, right after the failure (what git wrote of its own is gone by then; the disk is still full).
 */
import fs from 'node:fs';
import path from 'node:path';

/** What the system or git says when a write found no space (ENOSPC), or a quota spent (EDQUOT). */
const NO_SPACE = /\bENOSPC\b|No space left on device|Out of diskspace|\bEDQUOT\b|Disk quota exceeded/i;

/** A disk with less than this free counts as full: a failed write there is taken to be the space's fault. */
export const NEARLY_FULL_BYTES = 1024 * 1024;

/** Free bytes for an unprivileged writer on the disk holding `p` (its nearest existing ancestor); undefined if unknown. */
function freeBytes(p: string): number | undefined {
  for (let dir = path.resolve(p); ; dir = path.dirname(dir)) {
    try {
      const s = fs.statfsSync(dir);
      return s.bavail * s.bsize;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT' || path.dirname(dir) === dir) return undefined;
    }
  }
}

const size = (bytes: number) => (bytes < 1024 ? `${bytes} bytes` : bytes < 1024 * 1024 ? `${Math.floor(bytes / 1024)} KiB` : `${Math.floor(bytes / (1024 * 1024))} MiB`);

/**
 * Why a write that failed with `err` found no space, for a message: `the disk holding <path> is full (<n> free)` for
 * the first of `paths` whose disk has less than NEARLY_FULL_BYTES free; else, when the error itself says so (ENOSPC),
 * `no space was left on the disk holding <path> (… free now)` for the one with least free; undefined otherwise.
 */
export function diskFullCause(err: unknown, paths: string[]): string | undefined {
  const text = err instanceof Error ? `${(err as NodeJS.ErrnoException).code ?? ''} ${err.message}` : String(err);
  const says = NO_SPACE.test(text);
  const free = paths.map((p) => ({ p, bytes: freeBytes(p) })).filter((f): f is { p: string; bytes: number } => f.bytes !== undefined);
  const short = free.find((f) => f.bytes < NEARLY_FULL_BYTES);
  if (short) return `the disk holding ${short.p} is full (${size(short.bytes)} free)`;
  if (!says) return undefined;
  const least = free.sort((a, b) => a.bytes - b.bytes)[0];
  return least ? `no space was left on the disk holding ${least.p} (${size(least.bytes)} free now)` : 'no space was left on the disk';
}
