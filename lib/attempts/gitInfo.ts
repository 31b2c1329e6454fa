/** Read-only git questions of the branch listing and container endpoints (run where the repository is). */
import fs from 'node:fs';
import { git } from '../git';
import { dirSize } from '../fs/dirSize';

export interface BranchInfo {
  name: string;
  commit: string;
  lastCommit: { hash: string; message: string; author: string; date: string };
}

export async function listBranches(repo: string): Promise<{ current: string; branches: BranchInfo[] }> {
  const fmt = '%(refname:short)%00%(objectname)%00%(subject)%00%(authorname)%00%(committerdate:iso-strict)';
  const r = await git(repo, ['for-each-ref', `--format=${fmt}`, 'refs/heads']);
  const current = (await git(repo, ['symbolic-ref', '--short', '-q', 'HEAD'])).stdout.trim();
  const branches = r.stdout
    .split('\n')
    .filter(Boolean)
    .map((l) => {
      const [name, commit, message, author, date] = l.split('\0') as [string, string, string, string, string];
      return { name, commit, lastCommit: { hash: commit, message, author, date: date ? new Date(date).toISOString() : '' } };
    });
  return { current, branches };
}

export interface WorktreeStatus {
  exists: boolean;
  diskUsage: { total: number; used: number; available: number };
  gitStatus: { ahead: number; behind: number; modified: number; untracked: number; conflicted: number };
  files: { total: number; modified: number; added: number; deleted: number };
}

export async function worktreeStatus(worktree: string | null, baseBranch: string | null, baseCommit: string | null): Promise<WorktreeStatus> {
  const empty: WorktreeStatus = {
    exists: false,
    diskUsage: { total: 0, used: 0, available: 0 },
    gitStatus: { ahead: 0, behind: 0, modified: 0, untracked: 0, conflicted: 0 },
    files: { total: 0, modified: 0, added: 0, deleted: 0 },
  };
  if (!worktree || !fs.existsSync(worktree)) return empty;
  const s = { ...empty, exists: true };
  try {
    const st = fs.statfsSync(worktree);
    s.diskUsage = { total: st.blocks * st.bsize, used: dirSize(worktree), available: st.bavail * st.bsize };
  } catch {
    s.diskUsage.used = dirSize(worktree);
  }
  if (baseBranch) {
    const ab = await git(worktree, ['rev-list', '--left-right', '--count', `${baseBranch}...HEAD`]);
    if (ab.code === 0) {
      const [behind, ahead] = ab.stdout.trim().split(/\s+/).map(Number);
      s.gitStatus.ahead = ahead ?? 0;
      s.gitStatus.behind = behind ?? 0;
    }
  }
  const status = await git(worktree, ['status', '--porcelain']);
  for (const l of status.stdout.split('\n').filter(Boolean)) {
    const xy = l.slice(0, 2);
    if (xy === '??') s.gitStatus.untracked++;
    else if (/U|AA|DD/.test(xy)) s.gitStatus.conflicted++;
    else s.gitStatus.modified++;
  }
  s.files.total = (await git(worktree, ['ls-files'])).stdout.split('\n').filter(Boolean).length;
  if (baseCommit) {
    const ns = await git(worktree, ['diff', '--name-status', baseCommit]);
    for (const l of ns.stdout.split('\n').filter(Boolean)) {
      if (l.startsWith('A')) s.files.added++;
      else if (l.startsWith('D')) s.files.deleted++;
      else s.files.modified++;
    }
    s.files.added += s.gitStatus.untracked;
  }
  return s;
}
