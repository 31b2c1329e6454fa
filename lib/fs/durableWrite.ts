/**
 * Files that survive a crash: content written to a temp file beside the target and fsynced before it is renamed or
 * linked into place, and the directory fsynced after, so the new name is on disk too (a rename alone can be lost
 * with the directory's page, leaving the old file or none).
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

/** Writes `content` to a new temp file in `dir` (mode `mode`), fsynced; returns its path. */
export function writeTempDurably(dir: string, base: string, content: string, mode: number): string {
  const tmp = path.join(dir, `.${base}.${process.pid}.${crypto.randomBytes(4).toString('hex')}.tmp`);
  const fd = fs.openSync(tmp, 'wx', mode);
  try {
    fs.writeFileSync(fd, content);
    fs.fsyncSync(fd);
  } catch (err) {
    fs.closeSync(fd);
    fs.rmSync(tmp, { force: true });
    throw err;
  }
  fs.closeSync(fd);
  return tmp;
}

/** fsync of a directory, so the names created or renamed in it are durable (a no-op where directories cannot be). */
export function fsyncDirectory(dir: string): void {
  let fd: number | undefined;
  try {
    fd = fs.openSync(dir, 'r');
    fs.fsyncSync(fd);
  } catch (err) {
    // Windows cannot open a directory, some file systems refuse fsync on one: the rename is all they offer
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== 'EISDIR' && code !== 'EPERM' && code !== 'EINVAL' && code !== 'EACCES') throw err;
  } finally {
    if (fd !== undefined) fs.closeSync(fd);
  }
}
