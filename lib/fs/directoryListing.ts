/** Directory listing for GET /api/filesystem/list: entries of a directory already checked by the access policy. */
import fs from 'node:fs/promises';
import type { Stats } from 'node:fs';
import path from 'node:path';
import type { AccessPolicy } from './accessPolicy';

export interface FilesystemEntry {
  name: string;
  path: string;
  type: 'file' | 'directory';
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
  files: number;
  gitRepos: number;
  /** true when the entry cap or the time budget stopped the listing early. */
  truncated: boolean;
}

/** Directories a recursive listing never descends into (their contents are rarely wanted and can be huge). */
export const SKIP_DESCEND = new Set(['node_modules', '.git', 'vendor', 'bower_components', '.venv', 'venv', '__pycache__', '.cache', 'target', 'Pods']);

export const MAX_ENTRIES = 5000;

/** `drwxr-xr-x`-style permissions of a stat result. */
export function permissionString(st: Stats): string {
  const kind = st.isDirectory() ? 'd' : st.isSymbolicLink() ? 'l' : '-';
  const bits = 'rwxrwxrwx';
  let out = kind;
  for (let i = 0; i < 9; i++) out += st.mode & (1 << (8 - i)) ? bits[i] : '-';
  return out;
}

async function isGitRepo(dir: string): Promise<boolean> {
  try {
    await fs.lstat(path.join(dir, '.git'));
    return true;
  } catch {
    return false;
  }
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
 * sorted on the event loop) whole; `more` says names were left unread. Throws when the directory cannot be read.
 */
async function readNames(dir: string, cap: number): Promise<{ names: string[]; more: boolean }> {
  const names: string[] = [];
  let more = false;
  for await (const d of await fs.opendir(dir, { bufferSize: 64 })) {
    if (names.length >= cap) {
      more = true;
      break;
    }
    names.push(d.name);
  }
  return { names: names.sort((a, b) => a.localeCompare(b)), more };
}

/**
 * Lists `dir` (a real path inside the policy). Symbolic links are shown only when their target is inside the policy
 * too, and are never descended into, so a link cannot pull outside content into a listing.
 */
export async function listDirectory(dir: string, policy: AccessPolicy, opts: ListOptions): Promise<DirectoryListing> {
  const entries: FilesystemEntry[] = [];
  const depthLimit = opts.recursive ? Math.max(1, opts.maxDepth) : 1;
  let truncated = false;
  const deadline = Date.now() + (opts.timeBudgetMs ?? 10_000);
  const walk = async (current: string, depth: number): Promise<void> => {
    let names: string[];
    try {
      const read = await readNames(current, MAX_ENTRIES);
      names = read.names;
      if (read.more) truncated = true;
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
      const full = path.join(current, name);
      if (!policy.permits(full)) continue;
      let lst: Stats;
      let st: Stats;
      try {
        lst = await fs.lstat(full);
        st = lst;
        if (lst.isSymbolicLink()) {
          if (!policy.permits(await fs.realpath(full))) continue;
          st = await fs.stat(full);
        }
      } catch {
        continue; // vanished or dangling link
      }
      const directory = st.isDirectory();
      entries.push({
        name,
        path: full,
        type: directory ? 'directory' : 'file',
        isGitRepo: directory ? await isGitRepo(full) : false,
        hidden,
        size: st.size,
        modifiedAt: st.mtime.toISOString(),
        permissions: permissionString(lst.isSymbolicLink() ? st : lst),
      });
      if (directory && !lst.isSymbolicLink() && depth < depthLimit && !SKIP_DESCEND.has(name)) await walk(full, depth + 1);
    }
  };
  await walk(dir, 1);
  const directories = entries.filter((e) => e.type === 'directory').length;
  return {
    path: dir,
    entries,
    totalEntries: entries.length,
    directories,
    files: entries.length - directories,
    gitRepos: entries.filter((e) => e.isGitRepo).length,
    truncated,
  };
}
