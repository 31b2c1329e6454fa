/**
 * Git repository discovery for GET /api/filesystem/git-repos: a breadth-first walk bounded by depth, a time
 * budget and a directory cap, skipping dependency and VCS-internal directories and never following symlinks.
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import { git } from '../git';
import type { AccessPolicy } from './accessPolicy';
import { SKIP_DESCEND } from './directoryListing';

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
  /** true when the time budget or the directory cap ended the walk before the depth did. */
  truncated: boolean;
}

export interface DiscoveryOptions {
  maxDepth: number;
  includeSubmodules: boolean;
  /** Wall-clock budget of the walk in ms (repository inspection of what was found still completes). */
  timeBudgetMs?: number;
  maxDirectories?: number;
}

export function remoteType(url: string): GitRemote['type'] {
  if (/^https?:\/\//i.test(url)) return 'https';
  if (/^(ssh|git\+ssh):\/\//i.test(url) || /^[\w.-]+@[\w.-]+:/.test(url) || /^git:\/\//i.test(url)) return 'ssh';
  return 'file';
}

const run = async (cwd: string, args: string[]) => git(cwd, args, { timeoutMs: 10_000 });

/** The record of one repository work tree (dir has a `.git` entry). */
export async function inspectRepository(dir: string): Promise<GitRepositoryRecord> {
  const [gitDir, superproject, head, status, remotesOut, log] = await Promise.all([
    run(dir, ['rev-parse', '--absolute-git-dir']),
    run(dir, ['rev-parse', '--show-superproject-working-tree']),
    run(dir, ['symbolic-ref', '--quiet', '--short', 'HEAD']),
    run(dir, ['status', '--porcelain']),
    run(dir, ['remote', '-v']),
    run(dir, ['log', '-1', '--format=%H%x00%s%x00%an%x00%aI']),
  ]);
  const remotes: GitRemote[] = [];
  for (const line of remotesOut.stdout.split('\n')) {
    const m = /^(\S+)\t(\S+) \(fetch\)$/.exec(line);
    if (m?.[1] && m[2]) remotes.push({ name: m[1], url: m[2], type: remoteType(m[2]) });
  }
  let branch = head.code === 0 ? head.stdout.trim() : '';
  if (!branch) {
    const sha = await run(dir, ['rev-parse', '--short', 'HEAD']);
    branch = sha.code === 0 ? `(detached ${sha.stdout.trim()})` : '';
  }
  let hasUnpushedCommits = false;
  if (remotes.length > 0 && log.code === 0 && log.stdout.trim()) {
    const ahead = await run(dir, ['rev-list', '--count', 'HEAD', '--not', '--remotes']);
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

/** Finds repositories under `root` (a real, allowed directory) down to `maxDepth` levels (root = depth 0). */
export async function discoverGitRepositories(root: string, policy: AccessPolicy, opts: DiscoveryOptions): Promise<GitSearchResult> {
  const started = Date.now();
  const deadline = started + (opts.timeBudgetMs ?? 10_000);
  const maxDirectories = opts.maxDirectories ?? 20_000;
  const found: string[] = [];
  let visited = 0;
  let truncated = false;
  let level: string[] = [root];
  for (let depth = 0; depth <= opts.maxDepth && level.length > 0; depth++) {
    const next: string[] = [];
    for (const dir of level) {
      if (Date.now() > deadline || visited >= maxDirectories) {
        truncated = true;
        break;
      }
      visited++;
      let dirents: import('node:fs').Dirent[];
      try {
        dirents = await fs.readdir(dir, { withFileTypes: true });
      } catch {
        continue;
      }
      if (dirents.some((d) => d.name === '.git' && (d.isDirectory() || d.isFile()))) found.push(dir);
      if (depth === opts.maxDepth) continue;
      for (const d of dirents) {
        if (!d.isDirectory() || SKIP_DESCEND.has(d.name)) continue; // isDirectory() is false for symlinks
        const child = path.join(dir, d.name);
        if (policy.permits(child)) next.push(child);
      }
    }
    if (truncated) break;
    level = next;
  }
  const repositories: GitRepositoryRecord[] = [];
  for (let i = 0; i < found.length; i += 8) {
    const batch = await Promise.all(found.slice(i, i + 8).map((d) => inspectRepository(d)));
    repositories.push(...batch.filter((r) => opts.includeSubmodules || !r.isSubmodule));
  }
  return {
    searchPath: root,
    repositories,
    totalFound: repositories.length,
    searchDepth: opts.maxDepth,
    searchDuration: Date.now() - started,
    truncated,
  };
}
