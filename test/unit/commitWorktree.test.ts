/** The lean commit of an attempt's worktree: real git repositories, and the git processes it runs counted through PATH. */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { commitWorktree, parseRawNumstat } from '../../activities/git/commitWorktree';

const realGit = execFileSync('bash', ['-c', 'command -v git'], { encoding: 'utf8' }).trim();
let dir: string;
let log: string;
const savedPath = process.env.PATH;

const g = (cwd: string, ...a: string[]) => execFileSync(realGit, ['-c', 'user.name=t', '-c', 'user.email=t@example.com', ...a], { cwd, encoding: 'utf8' }).trim();
const gitCalls = () => (fs.existsSync(log) ? fs.readFileSync(log, 'utf8').split('\n').filter(Boolean) : []);

beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-commit-'));
  // a git on PATH that logs each call, then runs the real one
  const bin = path.join(dir, 'bin');
  fs.mkdirSync(bin);
  log = path.join(dir, 'git-calls.log');
  fs.writeFileSync(path.join(bin, 'git'), `#!/bin/sh\necho "$1" >> '${log}'\nexec '${realGit}' "$@"\n`, { mode: 0o755 });
  process.env.PATH = `${bin}:${savedPath}`;
});
afterEach(() => {
  process.env.PATH = savedPath;
  fs.rmSync(dir, { recursive: true, force: true });
});

function repo(): { cwd: string; base: string } {
  const cwd = path.join(dir, 'repo');
  fs.mkdirSync(cwd);
  g(cwd, 'init', '-q', '-b', 'main');
  g(cwd, 'config', 'user.email', 'repo@example.com');
  g(cwd, 'config', 'user.name', 'repo');
  fs.writeFileSync(path.join(cwd, 'keep.txt'), 'one\ntwo\n');
  fs.writeFileSync(path.join(cwd, 'gone.txt'), 'x\n');
  fs.writeFileSync(path.join(cwd, 'moved.txt'), 'a\nb\nc\nd\ne\n');
  g(cwd, 'add', '-A');
  g(cwd, 'commit', '-qm', 'base');
  return { cwd, base: g(cwd, 'rev-parse', 'HEAD') };
}

test('an agent that changed nothing on a fresh branch costs one git process and no commit', async () => {
  const { cwd, base } = repo();
  const stats = await commitWorktree({ worktreePath: cwd, baseCommit: base, message: 'attempt 1' });
  expect(stats).toEqual({ filesChanged: 0, filesCreated: 0, filesModified: 0, filesDeleted: 0, linesAdded: 0, linesRemoved: 0, files: [] });
  expect(gitCalls()).toEqual(['status']);
  expect(g(cwd, 'rev-parse', 'HEAD')).toBe(base);
});

test('changes are committed on the branch once, with statistics of base..HEAD from one diff; a retry makes no second commit', async () => {
  const { cwd, base } = repo();
  fs.appendFileSync(path.join(cwd, 'keep.txt'), 'three\n');
  fs.rmSync(path.join(cwd, 'gone.txt'));
  fs.writeFileSync(path.join(cwd, 'new fïle "q".txt'), 'n1\nn2\n');
  g(cwd, 'mv', 'moved.txt', 'renamed.txt');
  const stats = await commitWorktree({ worktreePath: cwd, baseCommit: base, message: 'Fix it (attempt 1)', repoPath: cwd });
  expect(gitCalls()).toEqual(['status', 'add', 'config', 'commit', 'diff']);
  expect(g(cwd, 'log', '-1', '--format=%s %ae')).toBe('Fix it (attempt 1) repo@example.com');
  expect(g(cwd, 'rev-list', '--count', `${base}..HEAD`)).toBe('1');
  expect(g(cwd, 'status', '--porcelain')).toBe('');
  expect(stats).toEqual({
    filesChanged: 4,
    filesCreated: 1,
    filesModified: 2,
    filesDeleted: 1,
    linesAdded: 3,
    linesRemoved: 1,
    files: expect.arrayContaining(['keep.txt', 'gone.txt', 'new fïle "q".txt', 'renamed.txt']),
  });

  fs.writeFileSync(log, '');
  const again = await commitWorktree({ worktreePath: cwd, baseCommit: base, message: 'Fix it (attempt 1)', repoPath: cwd });
  expect(again).toEqual(stats);
  expect(gitCalls()).toEqual(['status', 'diff']);
  expect(g(cwd, 'rev-list', '--count', `${base}..HEAD`)).toBe('1');
});

test('parseRawNumstat reads the raw and numstat records of one diff (-z: names as on disk)', () => {
  const out = [
    ':100644 100644 7898192 0f7bc76 M',
    'a',
    ':000000 100644 0000000 6178079 A',
    'c d',
    ':100644 100644 1111111 2222222 R087',
    'old',
    'new',
    ':000000 100644 0000000 3333333 A',
    'bin.png',
    ':000000 100644 0000000 4444444 A',
    'ü\tcafé.md',
    '1\t0\ta',
    '2\t0\tc d',
    '1\t1\t',
    'old',
    'new',
    '-\t-\tbin.png',
    '3\t0\tü\tcafé.md',
    '',
  ].join('\0');
  expect(parseRawNumstat(out)).toEqual({ filesChanged: 5, filesCreated: 3, filesModified: 2, filesDeleted: 0, linesAdded: 7, linesRemoved: 1, files: ['a', 'c d', 'new', 'bin.png', 'ü\tcafé.md'] });
});
