/**
 * A directory read through an open handle instead of its path. The filesystem endpoints check a path against the
 * access policy and then read it; a directory (or any directory above it) swapped for a symbolic link between the
 * check and the read would have been read wherever the link points. Opened first, the directory's real place is
 * read back from the handle (Linux: the kernel's /proc/self/fd/N link), checked, and everything after goes through
 * that handle (`via`), so what is read is what was checked, whatever is renamed or swapped meanwhile. The same goes
 * for a symbolic link's target (openLinkTarget: its place and its stat from one handle) and a subdirectory's `.git`
 * (hasGitEntry), and repository inspection runs git in a directory opened and compared with what the walk found
 * (lib/fs/gitDiscovery.ts, inspectRepository).
 */
import { constants, existsSync, type Stats } from 'node:fs';
import fs from 'node:fs/promises';

const FD_DIR = '/proc/self/fd';
/** Without /proc (not Linux) the directory is read by its path, checked again just after the open. */
const HANDLE_PATHS = existsSync(FD_DIR);

export interface OpenedDirectory {
  /** Where the opened directory is, read back from the handle after the open. */
  path: string;
  /** A path that reaches the opened directory itself (/proc/self/fd/N): reads and lstats of entries go through it. */
  via: string;
  /**
   * The same for another process (/proc/<this pid>/fd/N: a child's own /proc/self is not this one): the working
   * directory git runs in, so git works in the opened directory whatever its path names meanwhile.
   */
  viaForChildren: string;
  /** The opened directory's stat, from the handle (its device and inode say which directory it is). */
  stat(): Promise<Stats>;
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
    const viaForChildren = HANDLE_PATHS ? `/proc/${process.pid}/fd/${handle.fd}` : p;
    return { path: where, via, viaForChildren, stat: () => handle.stat(), close: () => handle.close() };
  } catch (err) {
    await handle.close();
    throw err;
  }
}

/**
 * Linux's O_PATH (the same number on every architecture Node runs on there; Node's fs.constants lacks it): a handle
 * that pins a file without opening it for reading, so no permission on the file is needed, a FIFO does not block and
 * a device is not opened.
 */
const O_PATH = 0o10000000;

export interface LinkTarget {
  /** Where the target really is, read back from the handle. */
  path: string;
  /** The target's stat, from the same handle. */
  stats: Stats;
  /** A path that reaches the target itself (/proc/self/fd/N): a directory's `.git` is looked up through it. */
  via: string;
  close(): Promise<void>;
}

/**
 * What the symbolic link `p` points to, pinned: the target is opened once (O_PATH), and both its real place and its
 * stat come from that handle. Checked by its place and then stat'ed by the link's name, a link re-pointed in between
 * had one file checked and another one's size, times and mode shown. Throws when the link dangles or loops (ENOENT,
 * ELOOP). Without /proc (not Linux) by path: the stat is kept only when the real place's own lstat is the same file,
 * which narrows the window without closing it.
 */
export async function openLinkTarget(p: string): Promise<LinkTarget> {
  if (!HANDLE_PATHS) {
    const stats = await fs.stat(p);
    const where = await fs.realpath(p);
    const again = await fs.lstat(where);
    if (again.dev !== stats.dev || again.ino !== stats.ino) throw Object.assign(new Error(`${p} changed while it was read`), { code: 'ESTALE' });
    return { path: where, stats, via: where, close: async () => {} };
  }
  const handle = await fs.open(p, O_PATH);
  try {
    const via = `${FD_DIR}/${handle.fd}`;
    const [where, stats] = await Promise.all([fs.readlink(via), handle.stat()]);
    return { path: where, stats, via, close: () => handle.close() };
  } catch (err) {
    await handle.close();
    throw err;
  }
}

/**
 * Whether the directory entry `p` (lstat'ed as a directory by the caller) holds a `.git` entry, looked up in the
 * directory itself: a yes by the path (which follows a link swapped in since) is confirmed in the directory pinned
 * first, refused if it is no longer a directory (O_DIRECTORY | O_NOFOLLOW: a link is ENOTDIR), so a yes never comes
 * from wherever such a link points. A no by the path is kept (most directories are not repositories: one lstat, as
 * before). Without /proc by path.
 */
export async function hasGitEntry(p: string): Promise<boolean> {
  try {
    await fs.lstat(`${p}/.git`);
    if (!HANDLE_PATHS) return true;
    const handle = await fs.open(p, O_PATH | constants.O_DIRECTORY | constants.O_NOFOLLOW);
    try {
      await fs.lstat(`${FD_DIR}/${handle.fd}/.git`);
      return true;
    } finally {
      await handle.close();
    }
  } catch {
    return false;
  }
}
