/** Directory listing for GET /api/filesystem/list: entries of a directory already checked by the access policy. */
import { isUtf8 } from 'node:buffer';
import fs from 'node:fs/promises';
import type { Stats } from 'node:fs';
import path from 'node:path';
import { type AccessPolicy, accessDenied } from './accessPolicy';
import { hasGitEntry, type OpenedDirectory, openDirectory, openLinkTarget } from './openedDirectory';

/** What an entry is (after following a symbolic link): `file` is a regular file. */
export const ENTRY_TYPES = ['file', 'directory', 'fifo', 'socket', 'block_device', 'character_device'] as const;
export type EntryType = (typeof ENTRY_TYPES)[number];

export interface FilesystemEntry {
  name: string;
  path: string;
  type: EntryType;
  isGitRepo: boolean;
  hidden: boolean;
  size: number;
  modifiedAt: string;
  permissions: string;
}

export interface DirectoryListing {
  path: string;
  entries: FilesystemEntry[];
  totalEntries: number;
  directories: number;
  /** regular files (FIFOs, sockets and devices are in totalEntries only) */
  files: number;
  gitRepos: number;
  /** true when the entry cap or the time budget stopped the listing early. */
  truncated: boolean;
  /**
   * Entries left out because their name is not UTF-8: JSON text cannot carry it, no path given back could name it,
   * and no project can use a path holding it (PostgreSQL text is UTF-8). Hidden ones count only with showHidden.
   */
  skippedNonUtf8: number;
}

/** Directories a recursive listing never descends into (their contents are rarely wanted and can be huge). */
export const SKIP_DESCEND = new Set(['node_modules', '.git', 'vendor', 'bower_components', '.venv', 'venv', '__pycache__', '.cache', 'target', 'Pods']);

export const MAX_ENTRIES = 5000;

/** The entry type of a stat result (a symbolic link's target: links are followed). */
export function entryType(st: Stats): EntryType {
  if (st.isDirectory()) return 'directory';
  if (st.isFIFO()) return 'fifo';
  if (st.isSocket()) return 'socket';
  if (st.isBlockDevice()) return 'block_device';
  if (st.isCharacterDevice()) return 'character_device';
  return 'file';
}

/** `drwxr-xr-x`-style permissions of a stat result; the first letter is the type's, as `ls -l` writes it. */
export function permissionString(st: Stats): string {
  const kind = st.isDirectory() ? 'd' : st.isSymbolicLink() ? 'l' : st.isFIFO() ? 'p' : st.isSocket() ? 's' : st.isBlockDevice() ? 'b' : st.isCharacterDevice() ? 'c' : '-';
  const bits = 'rwxrwxrwx';
  let out = kind;
  for (let i = 0; i < 9; i++) out += st.mode & (1 << (8 - i)) ? bits[i] : '-';
  return out;
}

export interface ListOptions {
  showHidden: boolean;
  recursive: boolean;
  maxDepth: number;
  /** Wall-clock budget of the listing in ms (default 10 s); when it runs out the listing ends with truncated: true. */
  timeBudgetMs?: number;
}

/**
 * Up to `cap` names of `dir`, sorted, read with `opendir` so a directory of a million entries is never read (nor
 * sorted on the event loop) whole; `more` says names were left unread. Names are read as bytes: one that is not
 * UTF-8 would come back from a string read with U+FFFD in it, naming no entry, so it is set apart (`nonUtf8`, with
 * whether it is hidden). Throws when the directory cannot be read.
 */
async function readNames(dir: string, cap: number): Promise<{ names: string[]; more: boolean; nonUtf8: { hidden: boolean }[] }> {
  const names: string[] = [];
  const nonUtf8: { hidden: boolean }[] = [];
  let more = false;
  // Node reads names as bytes with encoding 'buffer' (as readdir does); its typings only list string encodings here
  for await (const d of await fs.opendir(dir, { bufferSize: 64, encoding: 'buffer' as BufferEncoding })) {
    if (names.length + nonUtf8.length >= cap) {
      more = true;
      break;
    }
    const raw = d.name as unknown as Buffer;
    if (isUtf8(raw)) names.push(raw.toString('utf8'));
    else nonUtf8.push({ hidden: raw[0] === 0x2e });
  }
  return { names: names.sort((a, b) => a.localeCompare(b)), more, nonUtf8 };
}

/**
 * Lists `dir` (a real path inside the policy). Symbolic links are shown only when their target is inside the policy
 * too, and are never descended into, so a link cannot pull outside content into a listing; its target is pinned
 * (openLinkTarget), so the target checked is the one whose metadata is shown. Every directory is read
 * through an open handle whose real place is checked first (lib/fs/openedDirectory.ts): `dir`, or a directory above
 * it, swapped for a link to outside the roots after the request's check is ACCESS_DENIED, and a subdirectory swapped
 * for a link during the walk is not descended into.
 */
export async function listDirectory(dir: string, policy: AccessPolicy, opts: ListOptions): Promise<DirectoryListing> {
  const entries: FilesystemEntry[] = [];
  const depthLimit = opts.recursive ? Math.max(1, opts.maxDepth) : 1;
  let truncated = false;
  let skippedNonUtf8 = 0;
  const deadline = Date.now() + (opts.timeBudgetMs ?? 10_000);
  const walk = async (current: OpenedDirectory, depth: number): Promise<void> => {
    let names: string[];
    try {
      const read = await readNames(current.via, MAX_ENTRIES);
      names = read.names;
      if (read.more) truncated = true;
      skippedNonUtf8 += read.nonUtf8.filter((n) => opts.showHidden || !n.hidden).length;
    } catch {
      return; // unreadable directory: nothing to show
    }
    for (const name of names) {
      if (entries.length >= MAX_ENTRIES || Date.now() > deadline) {
        truncated = true;
        return;
      }
      const hidden = name.startsWith('.');
      if (hidden && !opts.showHidden) continue;
      const full = path.join(current.path, name); // as shown
      const at = path.join(current.via, name); // as read: through the directory's handle
      if (!policy.permits(full)) continue;
      let lst: Stats;
      let st: Stats;
      let isGitRepo = false;
      try {
        lst = await fs.lstat(at);
        st = lst;
        if (lst.isSymbolicLink()) {
          // the target pinned once: the place checked, the stat shown and the `.git` looked up are one file's, even
          // if the link is re-pointed meanwhile (by name, a link re-pointed after the check had another file shown)
          const target = await openLinkTarget(at);
          try {
            if (!policy.permits(target.path)) continue;
            st = target.stats;
            if (st.isDirectory()) isGitRepo = await fs.lstat(path.join(target.via, '.git')).then(() => true, () => false);
          } finally {
            await target.close();
          }
        } else if (lst.isDirectory()) {
          isGitRepo = await hasGitEntry(at); // in the directory itself: false if it was swapped for a link since
        }
      } catch {
        continue; // vanished or dangling link
      }
      const directory = st.isDirectory();
      entries.push({
        name,
        path: full,
        type: entryType(st),
        isGitRepo,
        hidden,
        size: st.size,
        modifiedAt: st.mtime.toISOString(),
        permissions: permissionString(lst.isSymbolicLink() ? st : lst),
      });
      if (directory && !lst.isSymbolicLink() && depth < depthLimit && !SKIP_DESCEND.has(name)) {
        // from the parent's handle, and never through a link (one swapped in since the lstat is refused: ENOTDIR)
        const child = await openDirectory(at, { noFollow: true }).catch(() => undefined);
        if (!child) continue;
        try {
          if (policy.permits(child.path)) await walk(child, depth + 1);
        } finally {
          await child.close();
        }
      }
    }
  };
  // gone since the request's check, or unreadable: nothing to show (as when the read itself fails)
  const top = await openDirectory(dir).catch(() => undefined);
  if (top) {
    try {
      if (!policy.permits(top.path)) throw accessDenied(dir);
      await walk(top, 1);
    } finally {
      await top.close();
    }
  }
  return {
    path: top?.path ?? dir,
    entries,
    totalEntries: entries.length,
    directories: entries.filter((e) => e.type === 'directory').length,
    files: entries.filter((e) => e.type === 'file').length,
    gitRepos: entries.filter((e) => e.isGitRepo).length,
    truncated,
    skippedNonUtf8,
  };
}
