/**
 * Git repository discovery for GET /api/filesystem/git-repos: a breadth-first walk bounded by depth, a time
 * budget and an entry cap, skipping dependency and VCS-internal directories and never following symlinks.
 */
import fs from 'node:fs/promises';
import { isUtf8 } from 'node:buffer';
import path from 'node:path';
import { git } from '../git';
import { redactUrlCredentials } from '../urlCredentials';
import { type AccessPolicy, accessDenied } from './accessPolicy';
import { SKIP_DESCEND } from './directoryListing';
import { type OpenedDirectory, openDirectory } from './openedDirectory';

export interface GitRemote {
  name: string;
  url: string;
  /** https for http(s) URLs, ssh for ssh:// and scp-like URLs, file for local paths. */
  type: 'https' | 'ssh' | 'file';
}

export interface GitRepositoryRecord {
  name: string;
  path: string;
  gitPath: string;
  isSubmodule: boolean;
  branch: string;
  hasUncommittedChanges: boolean;
  hasUnpushedCommits: boolean;
  remotes: GitRemote[];
  lastCommit: { hash: string; message: string; author: string; date: string } | null;
}

export interface GitSearchResult {
  searchPath: string;
  repositories: GitRepositoryRecord[];
  totalFound: number;
  searchDepth: number;
  searchDuration: number;
  /** true when the time budget or the entry cap stopped the walk or the inspection early. */
  truncated: boolean;
  /** directories not searched because their name is not UTF-8 (no path in JSON text can name them) */
  skippedNonUtf8: number;
}

export interface DiscoveryOptions {
  maxDepth: number;
  includeSubmodules: boolean;
  /** Wall-clock budget in ms of the walk and of inspecting what it found (default 10 s). */
  timeBudgetMs?: number;
  /** Directory entries the walk reads at most (default 50,000). */
  maxEntries?: number;
  /** Inspects one repository (default: inspectRepository in this process; the API passes lib/fs/repoInspector). */
  inspect?: (dir: string, found: DirectoryIdentity) => Promise<GitRepositoryRecord | null>;
}

/** Which directory the walk found: its device and inode, read from the handle it was read through. */
export interface DirectoryIdentity {
  dev: number;
  ino: number;
}

export function remoteType(url: string): GitRemote['type'] {
  if (/^https?:\/\//i.test(url)) return 'https';
  if (/^(ssh|git\+ssh):\/\//i.test(url) || /^[\w.-]+@[\w.-]+:/.test(url) || /^git:\/\//i.test(url)) return 'ssh';
  return 'file';
}

/**
 * The record of the repository work tree the walk found at `dir` (its real path; `found`: which directory it was), or
 * null when `dir` is no longer that directory: swapped for a symbolic link (to outside the roots, say), moved, or
 * removed between the walk and now. The directory is opened (never through a link), compared with what was found, and
 * git runs in it through that handle (its working directory /proc/<pid>/fd/N), never by the path again, so a swap
 * during the inspection cannot have git read another repository either. By path, a repository swapped for a link
 * after the walk was inspected wherever the link pointed. Without /proc (not Linux) git runs by the path, checked just
 * before.
 */
export async function inspectRepository(dir: string, found: DirectoryIdentity): Promise<GitRepositoryRecord | null> {
  const opened = await openDirectory(dir, { noFollow: true }).catch(() => undefined);
  if (!opened) return null; // gone, or a link now
  try {
    const st = await opened.stat();
    if (opened.path !== dir || st.dev !== found.dev || st.ino !== found.ino) return null;
    return await inspectOpened(dir, opened);
  } finally {
    await opened.close();
  }
}

async function inspectOpened(dir: string, opened: OpenedDirectory): Promise<GitRepositoryRecord> {
  const cwd = opened.viaForChildren;
  // git looks for the repository in this directory alone: with its `.git` removed since the walk, it would otherwise
  // walk up and describe an enclosing repository, which may lie outside the roots. Not for the superproject
  // question, which is about the repositories above (a submodule's superproject may be several levels up).
  const env = { GIT_CEILING_DIRECTORIES: path.dirname(opened.path) };
  const run = (args: string[], above = false) => git(cwd, args, { timeoutMs: 10_000, env: above ? {} : env });
  const [gitDir, superproject, head, status, remotesOut, log] = await Promise.all([
    run(['rev-parse', '--absolute-git-dir']),
    run(['rev-parse', '--show-superproject-working-tree'], true),
    run(['symbolic-ref', '--quiet', '--short', 'HEAD']),
    run(['status', '--porcelain']),
    run(['remote', '-v']),
    run(['log', '-1', '--format=%H%x00%s%x00%an%x00%aI']),
  ]);
  const remotes: GitRemote[] = [];
  for (const line of remotesOut.stdout.split('\n')) {
    const m = /^(\S+)\t(\S+) \(fetch\)$/.exec(line);
    // shown without its credentials (a remote may carry a password or token: lib/urlCredentials.ts)
    if (m?.[1] && m[2]) remotes.push({ name: m[1], url: redactUrlCredentials(m[2]), type: remoteType(m[2]) });
  }
  let branch = head.code === 0 ? head.stdout.trim() : '';
  if (!branch) {
    const sha = await run(['rev-parse', '--short', 'HEAD']);
    branch = sha.code === 0 ? `(detached ${sha.stdout.trim()})` : '';
  }
  let hasUnpushedCommits = false;
  if (remotes.length > 0 && log.code === 0 && log.stdout.trim()) {
    const ahead = await run(['rev-list', '--count', 'HEAD', '--not', '--remotes']);
    hasUnpushedCommits = ahead.code === 0 && Number(ahead.stdout.trim()) > 0;
  }
  const [hash = '', message = '', author = '', date = ''] = log.code === 0 ? log.stdout.trim().split('\0') : [];
  return {
    name: path.basename(dir),
    path: dir,
    gitPath: gitDir.code === 0 ? gitDir.stdout.trim() : path.join(dir, '.git'),
    isSubmodule: superproject.code === 0 && superproject.stdout.trim() !== '',
    branch,
    hasUncommittedChanges: status.code === 0 && status.stdout.trim() !== '',
    hasUnpushedCommits,
    remotes,
    // git's %aI is in the author's offset (`+00:00`, `+02:00`); the API answers UTC `….000Z` everywhere
    lastCommit: hash ? { hash, message, author, date: date ? new Date(date).toISOString() : date } : null,
  };
}

/** Repositories inspected at once by one discovery (each inspection runs about seven short git commands). */
const INSPECT_BATCH = 4;

/**
 * Finds repositories under `root` (a real, allowed directory) down to `maxDepth` levels (root = depth 0). The walk
 * reads directories with `opendir` (never a whole huge directory into memory) and stops at the entry cap or the
 * time budget; the budget also covers inspecting what was found. Either stop gives `truncated: true`.
 */
export async function discoverGitRepositories(root: string, policy: AccessPolicy, opts: DiscoveryOptions): Promise<GitSearchResult> {
  const started = Date.now();
  const deadline = started + (opts.timeBudgetMs ?? 10_000);
  const maxEntries = opts.maxEntries ?? 50_000;
  const inspect = opts.inspect ?? inspectRepository;
  const found: { dir: string; identity: DirectoryIdentity }[] = [];
  let entries = 0;
  let truncated = false;
  let skippedNonUtf8 = 0;
  const overBudget = () => {
    if (Date.now() > deadline || entries >= maxEntries) truncated = true;
    return truncated;
  };
  let level: string[] = [root];
  for (let depth = 0; depth <= opts.maxDepth && level.length > 0 && !overBudget(); depth++) {
    const next: string[] = [];
    for (const dir of level) {
      if (overBudget()) break;
      // the root as the request's check resolved it; below it never through a link (one swapped in since it was read
      // is refused: ENOTDIR); wherever the open landed is checked before anything is read (lib/fs/openedDirectory.ts)
      const opened = await openDirectory(dir, { noFollow: depth > 0 }).catch(() => undefined);
      if (!opened) continue; // unreadable or vanished
      try {
        if (!policy.permits(opened.path)) {
          if (depth === 0) throw accessDenied(root); // moved out of the roots since the request's check
          continue;
        }
        let handle: import('node:fs').Dir;
        try {
          // names as bytes: one that is not UTF-8 read as a string names no entry (U+FFFD), and its walk failed unseen
          handle = await fs.opendir(opened.via, { bufferSize: 64, encoding: 'buffer' as BufferEncoding });
        } catch {
          continue; // unreadable
        }
        let isRepo = false;
        try {
          for await (const d of handle) {
            if (++entries > maxEntries || (entries % 256 === 0 && Date.now() > deadline)) {
              truncated = true;
              break;
            }
            const raw = d.name as unknown as Buffer;
            const name = raw.toString('utf8');
            if (name === '.git' && (d.isDirectory() || d.isFile())) isRepo = true;
            if (depth === opts.maxDepth || !d.isDirectory() || SKIP_DESCEND.has(name)) continue; // isDirectory() is false for symlinks
            if (!isUtf8(raw)) {
              skippedNonUtf8++;
              continue;
            }
            const child = path.join(opened.path, name);
            if (policy.permits(child)) next.push(child);
          }
        } catch {
          // a directory that fails mid-read contributes what was read
        }
        // breaking out of `for await` closes the handle; a normal end closes it too
        if (isRepo) {
          // which directory this is, so the inspection can tell it from whatever holds its path by then
          const st = await opened.stat().catch(() => undefined);
          if (st) found.push({ dir: opened.path, identity: { dev: st.dev, ino: st.ino } });
        }
      } finally {
        await opened.close();
      }
    }
    level = next;
  }
  const repositories: GitRepositoryRecord[] = [];
  for (let i = 0; i < found.length; i += INSPECT_BATCH) {
    if (Date.now() > deadline) {
      truncated = true;
      break;
    }
    const batch = await Promise.allSettled(found.slice(i, i + INSPECT_BATCH).map((d) => inspect(d.dir, d.identity)));
    for (const r of batch) {
      if (r.status === 'rejected') truncated = true; // a repository that could not be inspected is left out, and said so
      // null: no longer the directory found (swapped, moved or removed since the walk): left out like one gone
      else if (r.value && (opts.includeSubmodules || !r.value.isSubmodule)) repositories.push(r.value);
    }
  }
  return {
    searchPath: root,
    repositories,
    totalFound: repositories.length,
    searchDepth: opts.maxDepth,
    searchDuration: Date.now() - started,
    truncated,
    skippedNonUtf8,
  };
}
