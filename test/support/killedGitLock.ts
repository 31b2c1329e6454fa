/** A real lock: a `git commit -a` of the worktree, holding its index.lock while its editor runs; killed -9, a stale one. */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { eventually } from './harness';

/**
 * Edits `file` (tracked) in `worktree` and starts `git commit -a` there in a process group of its own with an editor
 * that sleeps: git holds the index.lock meanwhile. Resolves once the editor runs (git has written the lock whole by
 * then: resolving as soon as the lock appeared let git write it on after a test had aged its mtime, ci52b), with the
 * lock and the function that kills the group with SIGKILL, as the OOM killer would (resolving once git has exited,
 * its lock left behind).
 */
export async function indexLockOfRunningGit(worktree: string, file: string): Promise<{ lock: string; kill(): Promise<void> }> {
  const gitDir = fs.readFileSync(path.join(worktree, '.git'), 'utf8').replace(/^gitdir: /, '').trim();
  const lock = path.join(path.resolve(worktree, gitDir), 'index.lock');
  fs.appendFileSync(path.join(worktree, file), 'edited before the kill\n');
  const editing = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'armada-git-editor-')), 'editing');
  const git = spawn('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.com', 'commit', '-a'], {
    cwd: worktree,
    detached: true,
    stdio: 'ignore',
    env: { ...process.env, GIT_EDITOR: `touch '${editing}'; sleep 60; true` },
  });
  const exited = new Promise((resolve) => git.once('exit', resolve));
  await eventually(async () => fs.existsSync(editing) && fs.existsSync(lock), 20_000, 20);
  fs.rmSync(path.dirname(editing), { recursive: true, force: true });
  return {
    lock,
    kill: async () => {
      try {
        process.kill(-(git.pid as number), 'SIGKILL');
      } catch {
        // killed already
      }
      await exited;
    },
  };
}

/** indexLockOfRunningGit's git, killed -9 at once: resolves with the lock file it left, once git has exited. */
export async function indexLockOfKilledGit(worktree: string, file: string): Promise<string> {
  const git = await indexLockOfRunningGit(worktree, file);
  await git.kill();
  return git.lock;
}
