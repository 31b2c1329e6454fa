/**
 * A directory read through an open handle instead of its path. The filesystem endpoints check a path against the
 * access policy and then read it; a directory (or any directory above it) swapped for a symbolic link between the
 * check and the read would have been read wherever the link points. Opened first, the directory's real place is
 * read back from the handle (Linux: the kernel's /proc/self/fd/N link), checked, and everything after goes through
 * that handle (`via`), so what is read is what was checked, whatever is renamed or swapped meanwhile.
 */
import { constants, existsSync } from 'node:fs';
import fs from 'node:fs/promises';

const FD_DIR = '/proc/self/fd';
/** Without /proc (not Linux) the directory is read by its path, checked again just after the open. */
const HANDLE_PATHS = existsSync(FD_DIR);

export interface OpenedDirectory {
  /** Where the opened directory is, read back from the handle after the open. */
  path: string;
  /** A path that reaches the opened directory itself (/proc/self/fd/N): reads and lstats of entries go through it. */
  via: string;
  close(): Promise<void>;
}

/**
 * Opens the directory at `p` (O_DIRECTORY: anything else fails with ENOTDIR) and says where it really is. With
 * `noFollow` (O_NOFOLLOW), a last component that is a symbolic link is refused too (Linux says ENOTDIR, others
 * ELOOP): a walk opens each child from its parent's handle, so no link anywhere on the way is followed. Open errors
 * are thrown as they come (ENOENT, ENOTDIR, ELOOP, EACCES).
 */
export async function openDirectory(p: string, opts: { noFollow?: boolean } = {}): Promise<OpenedDirectory> {
  const handle = await fs.open(p, constants.O_RDONLY | constants.O_DIRECTORY | (opts.noFollow ? constants.O_NOFOLLOW : 0));
  try {
    const via = HANDLE_PATHS ? `${FD_DIR}/${handle.fd}` : p;
    // the kernel's name of the open handle (with " (deleted)" after it once removed: then nothing is read from it)
    const where = HANDLE_PATHS ? await fs.readlink(via) : await fs.realpath(p);
    return { path: where, via, close: () => handle.close() };
  } catch (err) {
    await handle.close();
    throw err;
  }
}
