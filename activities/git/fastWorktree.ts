/**
 * The common case of an attempt's worktree in one git process instead of five: `git worktree add -b <branch> <path>
 * <commit>` runs `git branch`, `git symbolic-ref` and `git reset --hard` as processes of its own (17 ms of CPU for a
 * one-file repository, the largest cost of an attempt after the agent). Here the branch ref and the worktree's
 * administrative files (gitrepository-layout(5): `worktrees/<id>/{gitdir,commondir,HEAD}` and the worktree's `.git`
 * file) are written directly, and one `git read-tree -u --reset` fills the index and the files.
 * Only for a plain repository (a `.git` directory, the files ref backend, no post-checkout hook git could run) and
 * a new branch and worktree; anything else answers false and the caller runs `git worktree add`. Callers hold the repository's lock (withRepoLock).
 */
import fs from 'node:fs';
import path from 'node:path';
import { git } from '../../lib/git';

const SHA = /^[0-9a-f]{40}([0-9a-f]{24})?$/;
const SAFE_BRANCH = /^[A-Za-z0-9._-]+(\/[A-Za-z0-9._-]+)*$/;
/** A branch name this module handles itself: plain segments, none hidden, `..` or a lock file (git handles the rest). */
const plainBranch = (n: string) => SAFE_BRANCH.test(n) && n.split('/').every((p) => !p.startsWith('.') && !p.endsWith('.lock'));

/** The repository's git directory when it is a plain one this module can write to; undefined otherwise. */
function plainGitDir(repo: string): string | undefined {
  const gitDir = path.join(repo, '.git');
  try {
    if (!fs.statSync(gitDir).isDirectory()) return undefined; // a worktree or a submodule: its .git is a file
    if (fs.existsSync(path.join(gitDir, 'reftable'))) return undefined; // the reftable ref backend
  } catch {
    return undefined;
  }
  return gitDir;
}

/**
 * Whether a checkout in this repository could run a post-checkout hook (`git worktree add` runs it; read-tree does
 * not): a hook in the repository's hooks directory, or any hooks path or include in the configuration files git
 * reads. Conservative: when in doubt, the caller runs `git worktree add`.
 */
function mayRunCheckoutHook(gitDir: string): boolean {
  if (fs.existsSync(path.join(gitDir, 'hooks', 'post-checkout'))) return true;
  const home = process.env.HOME ?? '';
  const configs = [
    path.join(gitDir, 'config'),
    process.env.GIT_CONFIG_GLOBAL ?? path.join(home, '.gitconfig'),
    path.join(process.env.XDG_CONFIG_HOME ?? path.join(home, '.config'), 'git', 'config'),
    process.env.GIT_CONFIG_NOSYSTEM ? '' : '/etc/gitconfig',
  ];
  for (const f of configs) {
    if (!f) continue;
    let text: string;
    try {
      text = fs.readFileSync(f, 'utf8');
    } catch {
      continue;
    }
    if (/hookspath|\[include/i.test(text)) return true;
  }
  return false;
}

/**
 * The commit of refs/heads/<name> for each of `names`, read from the ref files (loose refs, then packed-refs);
 * undefined when they cannot be read that way (the caller asks git).
 */
export function readBranchCommits(repo: string, names: string[]): Map<string, string> | undefined {
  const gitDir = plainGitDir(repo);
  if (!gitDir || !names.every(plainBranch)) return undefined;
  const found = new Map<string, string>();
  let packed: Map<string, string> | undefined;
  for (const name of names) {
    let loose: string | undefined;
    try {
      loose = fs.readFileSync(path.join(gitDir, 'refs', 'heads', name), 'utf8').trim();
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code !== 'ENOENT' && code !== 'ENOTDIR' && code !== 'EISDIR') return undefined;
    }
    if (loose !== undefined) {
      if (!SHA.test(loose)) return undefined; // a symbolic ref: git knows
      found.set(name, loose);
      continue;
    }
    if (!packed) {
      packed = new Map();
      let text = '';
      try {
        text = fs.readFileSync(path.join(gitDir, 'packed-refs'), 'utf8');
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') return undefined;
      }
      for (const line of text.split('\n')) {
        if (!line || line.startsWith('#') || line.startsWith('^')) continue;
        const i = line.indexOf(' ');
        if (i > 0) packed.set(line.slice(i + 1), line.slice(0, i));
      }
    }
    const p = packed.get(`refs/heads/${name}`);
    if (p) found.set(name, p);
  }
  return found;
}

/**
 * Creates branch `branch` at `commit` and a worktree of it at `worktreePath`, checked out. False (nothing left
 * behind) when this repository or request is not the plain case; throws when git's checkout fails.
 */
export async function addWorktreeFast(repo: string, worktreePath: string, branch: string, commit: string): Promise<boolean> {
  const gitDir = plainGitDir(repo);
  if (!gitDir || !SHA.test(commit) || !plainBranch(branch) || mayRunCheckoutHook(gitDir)) return false;
  const id = path.basename(worktreePath);
  const admin = path.join(gitDir, 'worktrees', id);
  const ref = path.join(gitDir, 'refs', 'heads', ...branch.split('/'));
  if (fs.existsSync(admin) || fs.existsSync(worktreePath) || readBranchCommits(repo, [branch])?.size !== 0) return false;
  // the branch, as git writes a loose ref: a lock file created exclusively, then renamed over
  try {
    fs.mkdirSync(path.dirname(ref), { recursive: true });
    fs.writeFileSync(`${ref}.lock`, `${commit}\n`, { flag: 'wx' });
    fs.renameSync(`${ref}.lock`, ref);
  } catch {
    try {
      fs.rmSync(`${ref}.lock`, { force: true });
    } catch {
      /* not ours */
    }
    return false; // a name clash with an existing ref directory or file, a concurrent writer: let git say
  }
  try {
    // the worktree's .git file first, so the administrative directory never points at a missing worktree (which a
    // concurrent `git worktree prune` would remove)
    fs.mkdirSync(worktreePath, { recursive: true });
    fs.writeFileSync(path.join(worktreePath, '.git'), `gitdir: ${admin}\n`);
    fs.mkdirSync(admin, { recursive: true });
    fs.writeFileSync(path.join(admin, 'commondir'), '../..\n');
    fs.writeFileSync(path.join(admin, 'gitdir'), `${path.join(worktreePath, '.git')}\n`);
    fs.writeFileSync(path.join(admin, 'HEAD'), `ref: refs/heads/${branch}\n`);
    const r = await git(worktreePath, ['read-tree', '-u', '--reset', 'HEAD']);
    if (r.code !== 0) throw new Error(`git read-tree failed: ${r.stderr.trim() || `exit ${r.code}`}`);
    return true;
  } catch (err) {
    fs.rmSync(admin, { recursive: true, force: true });
    fs.rmSync(worktreePath, { recursive: true, force: true });
    fs.rmSync(ref, { force: true });
    throw err;
  }
}
