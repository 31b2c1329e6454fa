/**
 * activities/git/fastWorktree.ts: branch refs read from the ref files agree with git, and a worktree made without
 * `git worktree add` is one git itself recognises and works in (list, status, commit, remove, prune, branch -D).
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { addWorktreeFast, readBranchCommits } from '../../activities/git/fastWorktree';
import { stopLauncher } from '../../lib/process/launcher';
import { makeGitRepo } from '../support/harness';

afterAll(() => stopLauncher());

const g = (cwd: string, ...args: string[]) =>
  execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.com', ...args], { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();
const tmp = () => fs.mkdtempSync(path.join(os.tmpdir(), 'armada-fastwt-'));

describe('readBranchCommits', () => {
  test('loose and packed refs, missing ones, nested names: the same answers as git', () => {
    const repo = makeGitRepo({ 'a.txt': 'a\n' });
    g(repo, 'branch', 'armada/task-1-attempt-1');
    g(repo, 'branch', 'packed-one');
    g(repo, 'pack-refs', '--all');
    g(repo, 'commit', '--allow-empty', '-qm', 'two'); // main is loose again, newer than its packed line
    const head = g(repo, 'rev-parse', 'refs/heads/main');
    const base = g(repo, 'rev-parse', 'refs/heads/packed-one');
    const refs = readBranchCommits(repo, ['main', 'packed-one', 'armada/task-1-attempt-1', 'nope', 'armada/nope']);
    expect(refs && Object.fromEntries(refs)).toEqual({ main: head, 'packed-one': base, 'armada/task-1-attempt-1': base });
  });

  test('what it cannot read answers undefined (the caller asks git): a symbolic ref, a worktree as repository', () => {
    const repo = makeGitRepo();
    g(repo, 'symbolic-ref', 'refs/heads/alias', 'refs/heads/main');
    expect(readBranchCommits(repo, ['alias'])).toBeUndefined();
    const wt = path.join(tmp(), 'wt');
    g(repo, 'worktree', 'add', '-q', '-b', 'other', wt, 'main');
    expect(readBranchCommits(wt, ['main'])).toBeUndefined();
    expect(readBranchCommits(repo, ['../../config'])).toBeUndefined();
  });
});

describe('addWorktreeFast', () => {
  test('a worktree git recognises: listed like `git worktree add`, clean, committable, removable', async () => {
    const repo = makeGitRepo({ 'README.md': '# r\n', 'src/x.ts': 'export const x = 1;\n' });
    const commit = g(repo, 'rev-parse', 'HEAD');
    const dir = tmp();
    const fast = path.join(dir, 'fast-attempt');
    const slow = path.join(dir, 'slow-attempt');
    expect(await addWorktreeFast(repo, fast, 'armada/task-9-attempt-1', commit)).toBe(true);
    g(repo, 'worktree', 'add', '-q', '-b', 'armada/task-9-attempt-2', slow, commit);

    const list = g(repo, 'worktree', 'list', '--porcelain').split('\n\n');
    const entry = (p: string) => list.find((e) => e.startsWith(`worktree ${fs.realpathSync(p)}`));
    expect(entry(fast)).toBe(`worktree ${fs.realpathSync(fast)}\nHEAD ${commit}\nbranch refs/heads/armada/task-9-attempt-1`);
    expect(entry(slow)).toBe(`worktree ${fs.realpathSync(slow)}\nHEAD ${commit}\nbranch refs/heads/armada/task-9-attempt-2`);
    expect(fs.readFileSync(path.join(fast, 'src', 'x.ts'), 'utf8')).toBe('export const x = 1;\n');
    expect(g(fast, 'status', '--porcelain=v2', '--branch', '--untracked-files=all')).toBe(
      g(slow, 'status', '--porcelain=v2', '--branch', '--untracked-files=all').replace('attempt-2', 'attempt-1'),
    );
    // work in it as an agent would, and commit
    fs.writeFileSync(path.join(fast, 'new.txt'), 'new\n');
    g(fast, 'add', '-A');
    g(fast, 'commit', '-qm', 'agent work');
    expect(g(repo, 'rev-parse', 'refs/heads/armada/task-9-attempt-1')).toBe(g(fast, 'rev-parse', 'HEAD'));
    expect(g(repo, 'rev-parse', 'refs/heads/main')).toBe(commit); // the repository's own branch did not move
    // and git removes it like any other
    g(repo, 'worktree', 'remove', '--force', fast);
    g(repo, 'worktree', 'prune');
    g(repo, 'branch', '-D', 'armada/task-9-attempt-1');
    expect(fs.existsSync(fast)).toBe(false);
    expect(g(repo, 'worktree', 'list', '--porcelain')).not.toContain('fast-attempt');
    expect(g(repo, 'branch', '--list', 'armada/task-9-attempt-1')).toBe('');
  });

  test('not the plain case: false and nothing left behind (an existing branch or path, a worktree as repository)', async () => {
    const repo = makeGitRepo();
    const commit = g(repo, 'rev-parse', 'HEAD');
    const dir = tmp();
    g(repo, 'branch', 'taken');
    expect(await addWorktreeFast(repo, path.join(dir, 'a'), 'taken', commit)).toBe(false);
    fs.mkdirSync(path.join(dir, 'b'));
    expect(await addWorktreeFast(repo, path.join(dir, 'b'), 'fresh', commit)).toBe(false);
    const wt = path.join(dir, 'wt');
    g(repo, 'worktree', 'add', '-q', '-b', 'other', wt, 'main');
    expect(await addWorktreeFast(wt, path.join(dir, 'c'), 'fresh2', commit)).toBe(false);
    expect(g(repo, 'branch', '--list', 'fresh*')).toBe('');
    expect(fs.existsSync(path.join(dir, 'a'))).toBe(false);
    expect(fs.existsSync(path.join(dir, 'c'))).toBe(false);
  });

  test('a repository with a post-checkout hook (or a hooks path in its config) is left to git worktree add, which runs it', async () => {
    const repo = makeGitRepo();
    const commit = g(repo, 'rev-parse', 'HEAD');
    const dir = tmp();
    fs.writeFileSync(path.join(repo, '.git', 'hooks', 'post-checkout'), '#!/bin/sh\ntrue\n', { mode: 0o755 });
    expect(await addWorktreeFast(repo, path.join(dir, 'hooked'), 'hooked', commit)).toBe(false);
    fs.rmSync(path.join(repo, '.git', 'hooks', 'post-checkout'));
    g(repo, 'config', 'core.hooksPath', path.join(dir, 'hooks'));
    expect(await addWorktreeFast(repo, path.join(dir, 'hooked2'), 'hooked2', commit)).toBe(false);
    expect(g(repo, 'branch', '--list', 'hooked*')).toBe('');
  });

  test('a checkout git refuses (an unknown commit) throws and leaves no branch, worktree or registration', async () => {
    const repo = makeGitRepo();
    const dir = path.join(tmp(), 'bad');
    await expect(addWorktreeFast(repo, dir, 'bad-branch', 'f'.repeat(40))).rejects.toThrow(/read-tree/);
    expect(fs.existsSync(dir)).toBe(false);
    expect(g(repo, 'branch', '--list', 'bad-branch')).toBe('');
    expect(g(repo, 'worktree', 'list', '--porcelain')).not.toContain('bad');
  });
});
