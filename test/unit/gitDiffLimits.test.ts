/** An attempt's diff past git's output buffer: the largest files are listed with their counts, not their lines. */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseUnifiedDiff } from '../../lib/attempts/diffParse';
import { MAX_SHOWN_FILE_LINES, readAttemptDiff } from '../../lib/attempts/gitDiff';

const env = { ...process.env, GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@example.com', GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@example.com' };
const g = (cwd: string, ...args: string[]) => execFileSync('git', args, { cwd, env, stdio: 'pipe' }).toString().trim();
const lines = (n: number, word: string) => `${Array.from({ length: n }, (_, i) => `${word} ${i}`).join('\n')}\n`;

let dir: string;
let base: string;
beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-difflimits-'));
  g(dir, 'init', '-q', '-b', 'main');
  fs.writeFileSync(path.join(dir, 'small.txt'), 'one\n');
  fs.writeFileSync(path.join(dir, 'big.txt'), 'start\n');
  fs.writeFileSync(path.join(dir, 'sp "ace".txt'), 'x\n');
  fs.writeFileSync(path.join(dir, 'gone.txt'), lines(MAX_SHOWN_FILE_LINES + 10, 'old'));
  g(dir, 'add', '-A');
  g(dir, 'commit', '-q', '-m', 'base');
  base = g(dir, 'rev-parse', 'HEAD');
  g(dir, 'checkout', '-q', '-b', 'attempt');
  fs.appendFileSync(path.join(dir, 'small.txt'), 'two\n');
  fs.appendFileSync(path.join(dir, 'big.txt'), lines(MAX_SHOWN_FILE_LINES + 5000, 'generated'));
  fs.appendFileSync(path.join(dir, 'sp "ace".txt'), 'y\n');
  fs.rmSync(path.join(dir, 'gone.txt'));
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

const byPath = (text: string) => Object.fromEntries(parseUnifiedDiff(text).files.map((f) => [f.path, f]));

test('within the buffer every file is shown whole, as git gives it', async () => {
  const files = byPath(await readAttemptDiff({ worktreePath: dir, repoPath: dir, baseCommit: base, branch: 'attempt' }));
  expect(files['big.txt']).toMatchObject({ additions: MAX_SHOWN_FILE_LINES + 5000, deletions: 0 });
  expect(files['big.txt']?.omitted).toBeUndefined();
  expect(files['big.txt']?.changes.filter((c) => c.type === 'add')).toHaveLength(MAX_SHOWN_FILE_LINES + 5000);
});

test('past the buffer: files over the line limit come with their counts and no lines, the others whole; a new file past 8 MiB is counted, not read', async () => {
  // a new file past the untracked read limit (9 MiB of short lines)
  const huge = path.join(dir, 'huge.csv');
  fs.writeFileSync(huge, '1,2,3\n'.repeat(Math.ceil((9 * 1024 * 1024) / 6)));
  fs.writeFileSync(path.join(dir, 'new.txt'), 'hello\n');
  try {
    const src = { worktreePath: dir, repoPath: dir, baseCommit: base, branch: 'attempt' };
    const text = await readAttemptDiff(src, undefined, { maxBytes: 256 * 1024 });
    const files = byPath(text);
    expect(Object.keys(files).sort()).toEqual(['big.txt', 'gone.txt', 'huge.csv', 'new.txt', 'small.txt', 'sp "ace".txt']);
    expect(files['big.txt']).toMatchObject({ status: 'modified', omitted: true, additions: MAX_SHOWN_FILE_LINES + 5000, deletions: 0, changes: [] });
    expect(files['gone.txt']).toMatchObject({ status: 'deleted', omitted: true, additions: 0, deletions: MAX_SHOWN_FILE_LINES + 10 });
    expect(files['huge.csv']).toMatchObject({ status: 'added', omitted: true, additions: Math.ceil((9 * 1024 * 1024) / 6), changes: [] });
    expect(files['small.txt']).toMatchObject({ additions: 1, changes: expect.arrayContaining([{ type: 'add', lineNumber: 2, content: 'two' }]) });
    expect(files['sp "ace".txt']).toMatchObject({ additions: 1, deletions: 0 });
    expect(files['new.txt']).toMatchObject({ status: 'added', additions: 1 });
    expect(text).toContain('Armada: changes not shown: 25000 lines added, 0 removed (more than the 20000 lines shown of one file)');
    // one file asked for
    expect(Object.keys(byPath(await readAttemptDiff(src, 'big.txt', { maxBytes: 64 * 1024 })))).toEqual(['big.txt']);
    // the branch once the worktree is gone: the same rule on base..branch
    g(dir, 'add', 'small.txt', 'big.txt', 'sp "ace".txt', 'gone.txt');
    g(dir, 'commit', '-q', '-m', 'attempt work');
    const branch = byPath(await readAttemptDiff({ worktreePath: null, repoPath: dir, baseCommit: base, branch: 'attempt' }, undefined, { maxBytes: 256 * 1024 }));
    expect(Object.keys(branch).sort()).toEqual(['big.txt', 'gone.txt', 'small.txt', 'sp "ace".txt']);
    expect(branch['big.txt']).toMatchObject({ omitted: true, additions: MAX_SHOWN_FILE_LINES + 5000 });
    expect(branch['small.txt']?.changes.length).toBeGreaterThan(0);
  } finally {
    fs.rmSync(huge, { force: true });
  }
});

test("file names with spaces, quotes, tabs, backslashes and non-ASCII letters come out as they are, from git's quoting (whole and past the buffer)", async () => {
  const repo = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-diffnames-'));
  try {
    const names = ['sp ace.txt', 'q"uote.txt', 'tab\there.txt', 'back\\slash.txt', 'ü café.md', '日本.md'];
    g(repo, 'init', '-q', '-b', 'main');
    for (const n of names) fs.writeFileSync(path.join(repo, n), 'one\n');
    fs.writeFileSync(path.join(repo, 'old näme.txt'), lines(50, 'keep'));
    g(repo, 'add', '-A');
    g(repo, 'commit', '-q', '-m', 'base');
    const head = g(repo, 'rev-parse', 'HEAD');
    for (const n of names) fs.appendFileSync(path.join(repo, n), 'two\n');
    fs.writeFileSync(path.join(repo, 'nëw file.txt'), 'new\n');
    // past the buffer this one is omitted: its name is read from git and handed back to it
    const bigName = 'bïg\t"one".txt';
    fs.writeFileSync(path.join(repo, bigName), lines(MAX_SHOWN_FILE_LINES + 1, 'big'));
    g(repo, 'add', '--', bigName);
    g(repo, 'mv', 'old näme.txt', 'new näme.txt');
    const src = { worktreePath: repo, repoPath: repo, baseCommit: head, branch: 'main' };
    for (const maxBytes of [undefined, 64 * 1024]) {
      const files = parseUnifiedDiff(await readAttemptDiff(src, undefined, { maxBytes }));
      expect(files.files.map((f) => f.path).sort()).toEqual([...names, 'new näme.txt', 'nëw file.txt', bigName].sort());
      expect(files.files.find((f) => f.path === 'new näme.txt')).toMatchObject({ status: 'renamed', oldPath: 'old näme.txt' });
      for (const n of names) expect(files.files.find((f) => f.path === n)).toMatchObject({ additions: 1, deletions: 0 });
      expect(files.files.find((f) => f.path === bigName)).toMatchObject({ status: 'added', additions: MAX_SHOWN_FILE_LINES + 1, ...(maxBytes ? { omitted: true } : {}) });
    }
    g(repo, 'rm', '-q', '-f', '--', bigName);
    // one file asked for by name: glob characters are the name, not a pattern
    expect(parseUnifiedDiff(await readAttemptDiff(src, '*.txt')).files).toEqual([]);
    expect(parseUnifiedDiff(await readAttemptDiff(src, 'sp ace.txt')).files.map((f) => f.path)).toEqual(['sp ace.txt']);
    fs.writeFileSync(path.join(repo, '*.txt'), 'star\n');
    expect(parseUnifiedDiff(await readAttemptDiff(src, '*.txt')).files.map((f) => f.path)).toEqual(['*.txt']);
  } finally {
    fs.rmSync(repo, { recursive: true, force: true });
  }
});

test('untracked files of any name are new files in the diff: a newline, a byte that is not UTF-8, a symlink, a dangling symlink; past the buffer held to the line limit', async () => {
  const repo = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-diffuntracked-'));
  try {
    g(repo, 'init', '-q', '-b', 'main');
    fs.writeFileSync(path.join(repo, 'README.md'), 'one\n');
    g(repo, 'add', '-A');
    g(repo, 'commit', '-q', '-m', 'base');
    const head = g(repo, 'rev-parse', 'HEAD');
    fs.writeFileSync(path.join(repo, 'new\nline.txt'), 'x\n');
    fs.writeFileSync(Buffer.concat([Buffer.from(`${repo}/bad`), Buffer.from([0xff]), Buffer.from('byte.txt')]), 'x\ny\n');
    fs.symlinkSync('README.md', path.join(repo, 'link'));
    fs.symlinkSync('nowhere', path.join(repo, 'dangling'));
    const indexBefore = fs.readFileSync(path.join(repo, '.git', 'index'));
    const src = { worktreePath: repo, repoPath: repo, baseCommit: head, branch: 'main' };
    const files = byPath(await readAttemptDiff(src));
    expect(Object.keys(files).sort()).toEqual(['bad\uFFFDbyte.txt', 'dangling', 'link', 'new\nline.txt'].sort());
    expect(files['bad\uFFFDbyte.txt']).toMatchObject({ status: 'added', additions: 2 });
    expect(files.dangling).toMatchObject({ status: 'added', additions: 1, changes: [{ type: 'add', lineNumber: 1, content: 'nowhere' }] });
    expect(files.link).toMatchObject({ status: 'added', changes: [{ type: 'add', lineNumber: 1, content: 'README.md' }] });
    expect(files['new\nline.txt']).toMatchObject({ status: 'added', additions: 1 });
    // one asked for; and the worktree's own index is as it was (the reads used a copy)
    expect(Object.keys(byPath(await readAttemptDiff(src, 'dangling')))).toEqual(['dangling']);
    expect(fs.readFileSync(path.join(repo, '.git', 'index')).equals(indexBefore)).toBe(true);
    expect(g(repo, 'status', '--porcelain')).toContain('?? dangling');
    // an untracked file is held to the same rule as a tracked one: past the buffer, over the line limit, omitted
    fs.writeFileSync(path.join(repo, 'many.txt'), lines(MAX_SHOWN_FILE_LINES + 1, 'many'));
    expect(byPath(await readAttemptDiff(src))['many.txt']).toMatchObject({ additions: MAX_SHOWN_FILE_LINES + 1, deletions: 0 });
    const past = byPath(await readAttemptDiff(src, undefined, { maxBytes: 64 * 1024 }));
    expect(Object.keys(past).sort()).toEqual(['bad\uFFFDbyte.txt', 'dangling', 'link', 'many.txt', 'new\nline.txt'].sort());
    expect(past['many.txt']).toMatchObject({ status: 'added', omitted: true, additions: MAX_SHOWN_FILE_LINES + 1, changes: [] });
    expect(past.dangling).toMatchObject({ status: 'added', additions: 1 });
  } finally {
    fs.rmSync(repo, { recursive: true, force: true });
  }
});

test('past the buffer with no file over the line limit: the largest files lose their lines until the rest fits, none is dropped', async () => {
  const repo = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-diffmany-'));
  try {
    g(repo, 'init', '-q', '-b', 'main');
    for (let i = 0; i < 30; i++) fs.writeFileSync(path.join(repo, `f${i}.txt`), 'start\n');
    g(repo, 'add', '-A');
    g(repo, 'commit', '-q', '-m', 'base');
    const start = g(repo, 'rev-parse', 'HEAD');
    // 30 files of 100 to 3,000 new lines (~16 bytes each): ~750 KB of diff, every file far under the line limit
    for (let i = 0; i < 30; i++) fs.appendFileSync(path.join(repo, `f${i}.txt`), lines(100 * (i + 1), 'generated line'));
    const src = { worktreePath: repo, repoPath: repo, baseCommit: start, branch: 'main' };
    const text = await readAttemptDiff(src, undefined, { maxBytes: 256 * 1024 });
    const files = byPath(text);
    expect(Object.keys(files)).toHaveLength(30);
    for (let i = 0; i < 30; i++) expect(files[`f${i}.txt`]).toMatchObject({ additions: 100 * (i + 1), deletions: 0 });
    const omitted = Object.values(files).filter((f) => f.omitted).map((f) => f.additions);
    const shown = Object.values(files).filter((f) => !f.omitted);
    // the largest lost their lines, the smallest are whole, and what is shown fits the buffer
    expect(omitted.length).toBeGreaterThan(0);
    expect(shown.length).toBeGreaterThan(0);
    expect(Math.min(...omitted)).toBeGreaterThan(Math.max(...shown.map((f) => f.additions)));
    for (const f of shown) expect(f.changes.filter((c) => c.type === 'add')).toHaveLength(f.additions);
    expect(Buffer.byteLength(text)).toBeLessThan(256 * 1024 + 30 * 300);
    expect(text).toContain('among the largest files of a diff past the 256 KiB read of one');
  } finally {
    fs.rmSync(repo, { recursive: true, force: true });
  }
});

test('a diff past the buffer even with every file listed by its counts is a DIFF_TOO_LARGE error; one git cannot read is DIFF_READ_FAILED', async () => {
  const src = { worktreePath: dir, repoPath: dir, baseCommit: base, branch: 'attempt' };
  // one small file past a tiny buffer: listed by its counts
  expect(byPath(await readAttemptDiff(src, 'small.txt', { maxBytes: 16 }))['small.txt']).toMatchObject({ omitted: true, additions: 1 });
  // a mode change has no lines to leave out: its header alone is past the buffer
  const repo = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-diffmode-'));
  try {
    g(repo, 'init', '-q', '-b', 'main');
    fs.writeFileSync(path.join(repo, 'run.sh'), 'echo hi\n');
    g(repo, 'add', '-A');
    g(repo, 'commit', '-q', '-m', 'base');
    const start = g(repo, 'rev-parse', 'HEAD');
    fs.chmodSync(path.join(repo, 'run.sh'), 0o755);
    await expect(readAttemptDiff({ worktreePath: repo, repoPath: repo, baseCommit: start, branch: 'main' }, undefined, { maxBytes: 16 })).rejects.toMatchObject({
      statusCode: 500,
      code: 'DIFF_TOO_LARGE',
      message: expect.stringContaining('even with every file listed by its counts only'),
    });
  } finally {
    fs.rmSync(repo, { recursive: true, force: true });
  }
  await expect(readAttemptDiff({ ...src, baseCommit: 'f'.repeat(40) })).rejects.toMatchObject({ statusCode: 500, code: 'DIFF_READ_FAILED' });
  await expect(readAttemptDiff({ ...src, worktreePath: null, baseCommit: 'f'.repeat(40) })).rejects.toMatchObject({ code: 'DIFF_READ_FAILED' });
});
