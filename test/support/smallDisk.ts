/**
 * A real small disk for the disk-full tests: a tmpfs mounted for the test (they run as root), filled to its last
 * byte by a file of its own and freed again by removing that file.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export interface SmallDisk {
  /** The mount point. */
  dir: string;
  /** Fills the disk to the last byte (a write there then gets ENOSPC), or all but `leaveBytes`. */
  fill(leaveBytes?: number): void;
  /** Removes what fill() wrote. */
  free(): void;
  /** Frees the disk and unmounts it (lazily: a process may still have a file open there), then removes the mount point. */
  remove(): void;
}

/** Mounts a tmpfs of `size` (mount's `size=` form, `8m`) at a new temporary directory; `options` are added (uid, mode). */
export function mountSmallDisk(size: string, options: string[] = []): SmallDisk {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-smalldisk-'));
  execFileSync('mount', ['-t', 'tmpfs', '-o', [`size=${size}`, ...options].join(','), 'tmpfs', dir]);
  if (fs.statSync(dir).dev === fs.statSync(path.dirname(dir)).dev) throw new Error(`could not mount a tmpfs at ${dir} (the test runs as root)`);
  const filler = path.join(dir, 'filler');
  const free = () => fs.rmSync(filler, { force: true });
  return {
    dir,
    fill(leaveBytes = 0) {
      fillFile(filler);
      if (leaveBytes > 0) fs.truncateSync(filler, Math.max(0, fs.statSync(filler).size - leaveBytes));
    },
    free,
    remove() {
      free();
      execFileSync('umount', ['-l', dir]);
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Appends to `file` until its disk is full, to the last byte. */
function fillFile(file: string): void {
  const fd = fs.openSync(file, 'a');
  const chunk = Buffer.alloc(256 * 1024, 7);
  try {
    for (;;) fs.writeSync(fd, chunk);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOSPC') throw err;
  }
  // the last partial chunk: byte by byte is too slow, halve instead
  for (let size = chunk.length / 2; size >= 1; size = Math.floor(size / 2)) {
    try {
      fs.writeSync(fd, chunk.subarray(0, size));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOSPC') throw err;
    }
  }
  fs.closeSync(fd);
}
