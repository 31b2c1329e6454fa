import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import net from 'node:net';
import path from 'node:path';
import { makeGitRepo, startTestStack, type TestStack } from '../support/harness';

const gitEnv = { ...process.env, GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@example.com', GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@example.com' };
const g = (cwd: string, ...args: string[]) => execFileSync('git', args, { cwd, stdio: 'pipe', env: gitEnv }).toString();

let stack: TestStack;
let tree: string; // the temp dir holding both the allowed root and a sibling outside it
let root: string; // filesystem.allowedPaths = [root]
let projectRepo: string;

function write(rel: string, content = 'x') {
  fs.mkdirSync(path.dirname(path.join(root, rel)), { recursive: true });
  fs.writeFileSync(path.join(root, rel), content);
}

beforeAll(async () => {
  tree = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'armada-fs-')));
  root = path.join(tree, 'allowed');
  fs.mkdirSync(root);
  fs.mkdirSync(path.join(tree, 'outside'));
  fs.writeFileSync(path.join(tree, 'outside', 'secret.txt'), 'secret');
  write('a.txt', 'hello');
  write('.hidden', 'h');
  write('sub/b.txt');
  write('sub/deep/c.txt');
  write('blocked/inner.txt');
  write('node_modules/pkg/index.js');
  fs.symlinkSync('/etc', path.join(root, 'link-etc'));
  fs.symlinkSync(path.join(tree, 'outside'), path.join(root, 'link-outside'));
  fs.symlinkSync(path.join(root, 'sub'), path.join(root, 'link-in'));

  // repo1: https remote, pushed, then a dirty work tree
  const bare = path.join(tree, 'outside', 'remote.git');
  g(tree, 'init', '-q', '--bare', '-b', 'main', bare);
  const repo1 = path.join(root, 'repo1');
  fs.mkdirSync(repo1);
  g(repo1, 'init', '-q', '-b', 'main');
  fs.writeFileSync(path.join(repo1, 'f.txt'), '1');
  g(repo1, 'add', '-A');
  g(repo1, 'commit', '-q', '-m', 'first commit');
  g(repo1, 'remote', 'add', 'origin', bare);
  g(repo1, 'push', '-q', 'origin', 'main');
  g(repo1, 'remote', 'add', 'upstream', 'https://codehost.example/acme/repo1.git');
  fs.writeFileSync(path.join(repo1, 'f.txt'), 'changed');
  // repo2 (depth 2): ssh remote, a commit not on any remote
  const repo2 = path.join(root, 'nested', 'repo2');
  fs.mkdirSync(repo2, { recursive: true });
  g(repo2, 'init', '-q', '-b', 'dev');
  fs.writeFileSync(path.join(repo2, 'g.txt'), '2');
  g(repo2, 'add', '-A');
  g(repo2, 'commit', '-q', '-m', 'second repo');
  g(repo2, 'remote', 'add', 'origin', 'git@codehost.example:acme/repo2.git');
  g(repo2, 'fetch', '-q', bare, 'main:refs/remotes/origin/main'); // a remote-tracking ref that does not contain HEAD
  // a submodule of repo2
  g(repo2, '-c', 'protocol.file.allow=always', 'submodule', 'add', '-q', bare, 'sm');
  g(repo2, 'commit', '-q', '-m', 'add submodule');
  // a repository inside node_modules: discovery must skip it
  g(path.join(root, 'node_modules', 'pkg'), 'init', '-q');

  projectRepo = makeGitRepo();
  stack = await startTestStack({
    services: ['task'],
    // a root that does not exist and one that is blocked: allowed on paper, never a place to start browsing
    file: { filesystem: { allowedPaths: [root, path.join(tree, 'missing-root'), path.join(root, 'blocked')], blockedPaths: [path.join(root, 'blocked')] } },
  });
  const created = await stack.app('task').inject({ method: 'POST', url: '/api/projects', payload: { name: 'fs-project', repository: { url: projectRepo } } });
  expect(created.statusCode).toBe(201);
});

afterAll(async () => {
  await stack?.close();
  fs.rmSync(tree, { recursive: true, force: true });
  fs.rmSync(projectRepo, { recursive: true, force: true });
});

const list = (p: string, extra = '') => stack.app('task').inject({ method: 'GET', url: `/api/filesystem/list?path=${encodeURIComponent(p)}${extra}` });
const listRaw = (query: string) => stack.app('task').inject({ method: 'GET', url: `/api/filesystem/list?path=${query}` });
const repos = (p: string, extra = '') => stack.app('task').inject({ method: 'GET', url: `/api/filesystem/git-repos?path=${encodeURIComponent(p)}${extra}` });

function expectInside(paths: string[]) {
  for (const p of paths) expect(p === root || p.startsWith(`${root}/`)).toBe(true);
}

describe('GET /api/filesystem/roots', () => {
  test('the allowed roots that exist and are not blocked, where browsing can start (not the projects\' own directories)', async () => {
    const res = await stack.app('task').inject({ method: 'GET', url: '/api/filesystem/roots' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ success: true, data: { roots: [root] } });
    // each one lists
    expect((await list(root)).statusCode).toBe(200);
    // the project's directory is allowed, but not a root
    expect((await list(projectRepo)).statusCode).toBe(200);
    expect(res.json().data.roots).not.toContain(projectRepo);
  });
});

describe('GET /api/filesystem/list', () => {
  test('lists the allowed root; links leading outside and blocked paths are not shown', async () => {
    const res = await list(root);
    expect(res.statusCode).toBe(200);
    const data = res.json().data;
    expect(data.path).toBe(root);
    const names = data.entries.map((e: { name: string }) => e.name);
    expect(names).toEqual(expect.arrayContaining(['a.txt', 'sub', 'repo1', 'nested', 'link-in', 'node_modules']));
    expect(names).not.toContain('.hidden');
    expect(names).not.toContain('link-etc');
    expect(names).not.toContain('link-outside');
    expect(names).not.toContain('blocked');
    expectInside(data.entries.map((e: { path: string }) => e.path));
    const a = data.entries.find((e: { name: string }) => e.name === 'a.txt');
    expect(a).toMatchObject({ path: path.join(root, 'a.txt'), type: 'file', isGitRepo: false, hidden: false, size: 5 });
    expect(a.permissions).toMatch(/^-[rwx-]{9}$/);
    expect(Number.isNaN(Date.parse(a.modifiedAt))).toBe(false);
    expect(data.entries.find((e: { name: string }) => e.name === 'repo1')).toMatchObject({ type: 'directory', isGitRepo: true });
    expect(data.entries.find((e: { name: string }) => e.name === 'sub').permissions).toMatch(/^d/);
    expect(data).toMatchObject({ totalEntries: data.entries.length, gitRepos: 1 });
    expect(data.directories + data.files).toBe(data.totalEntries);

    const hidden = (await list(root, '&showHidden=true')).json().data.entries.map((e: { name: string }) => e.name);
    expect(hidden).toContain('.hidden');
  });

  test('recursive listing stays inside, honours maxDepth and does not descend into links', async () => {
    const res = await list(root, '&recursive=true&maxDepth=3');
    expect(res.statusCode).toBe(200);
    const paths: string[] = res.json().data.entries.map((e: { path: string }) => e.path);
    expectInside(paths);
    expect(paths).toContain(path.join(root, 'sub', 'deep', 'c.txt'));
    expect(paths).not.toContain(path.join(root, 'link-in', 'b.txt'));
    expect(paths.some((p) => p.includes('/blocked'))).toBe(false);
    expect(paths.some((p) => p.includes('/node_modules/'))).toBe(false);
    const shallow: string[] = (await list(root, '&recursive=true&maxDepth=2')).json().data.entries.map((e: { path: string }) => e.path);
    expect(shallow).toContain(path.join(root, 'sub', 'b.txt'));
    expect(shallow).not.toContain(path.join(root, 'sub', 'deep', 'c.txt'));
  });

  test('../ traversal, encoded and double-encoded traversal are refused with 403 ACCESS_DENIED', async () => {
    for (const res of [
      await list(`${root}/../outside`),
      await list(`${root}/%2e%2e/outside`),
      await list(`${root}/%252e%252e/outside`),
      await listRaw(`${root}/%2e%2e/outside`),
      await listRaw(`${root}/sub/..%2f..%2foutside`),
    ]) {
      expect(res.statusCode).toBe(403);
      expect(res.json()).toMatchObject({ success: false, error: { code: 'ACCESS_DENIED' } });
      expect(res.body).not.toContain('secret.txt');
    }
  });

  test('a directory whose name holds %XX (x%41y, %2e%2e) opens from the path its listing gives; an encoded .. that names none is still refused', async () => {
    for (const name of ['x%41y', '%2e%2e', 'a%252e']) fs.mkdirSync(path.join(root, 'pct', name), { recursive: true });
    fs.writeFileSync(path.join(root, 'pct', '%2e%2e', 'inside.txt'), 'x');
    const listed = (await list(path.join(root, 'pct'))).json().data.entries as { name: string; path: string }[];
    expect(listed.map((e) => e.name).sort()).toEqual(['%2e%2e', 'a%252e', 'x%41y']);
    for (const e of listed) {
      const res = await list(e.path);
      expect(res.statusCode).toBe(200);
      expect(res.json().data.path).toBe(path.join(root, 'pct', e.name));
    }
    expect((await list(path.join(root, 'pct', '%2e%2e'))).json().data.entries.map((e: { name: string }) => e.name)).toEqual(['inside.txt']);
    // no such directory: decoded, `..` folds out of the root
    const out = await list(`${root}/pct/sub/%2e%2e/%2e%2e/%2e%2e/outside`);
    expect(out.statusCode).toBe(403);
  });

  test('doubled slashes and harmless .. inside the root are normalised', async () => {
    const res = await list(`${root}//sub/../sub`);
    expect(res.statusCode).toBe(200);
    expect(res.json().data.path).toBe(path.join(root, 'sub'));
  });

  test('a symlink into /etc, /etc, /proc, / and the home directory are refused', async () => {
    for (const p of [path.join(root, 'link-etc'), path.join(root, 'link-outside'), '/etc', '/proc', '/proc/self', '/', os.homedir(), path.join(root, 'blocked'), '/var/../etc']) {
      const res = await list(p);
      expect(res.statusCode).toBe(403);
      expect(res.json().error.code).toBe('ACCESS_DENIED');
    }
  });

  test('a file given as directory is 400 NOT_A_DIRECTORY, a missing path 404 PATH_NOT_FOUND', async () => {
    const file = await list(path.join(root, 'a.txt'));
    expect(file.statusCode).toBe(400);
    expect(file.json().error.code).toBe('NOT_A_DIRECTORY');
    const missing = await list(path.join(root, 'nope'));
    expect(missing.statusCode).toBe(404);
    expect(missing.json().error.code).toBe('PATH_NOT_FOUND');
    // a missing path outside the roots does not reveal whether it exists
    expect((await list(path.join(tree, 'outside', 'nope'))).statusCode).toBe(403);
    expect((await list('relative/path')).statusCode).toBe(400);
    expect((await stack.app('task').inject({ method: 'GET', url: '/api/filesystem/list' })).json().error.code).toBe('VALIDATION_ERROR');
  });

  test('odd names and special files: every listed path opens as given, a name that is not UTF-8 is counted as skipped, FIFOs and sockets have their own type', async () => {
    const odd = path.join(root, 'odd');
    for (const name of [' spaced ', ' lead', 'trail ', 'tab\tname']) fs.mkdirSync(path.join(odd, name), { recursive: true });
    fs.writeFileSync(path.join(odd, ' spaced ', 'inside.txt'), 'x');
    // a directory whose name is not UTF-8 (bad\xff\xfename), and one beside it that is fine
    const badName = Buffer.concat([Buffer.from(`${odd}/bad`), Buffer.from([0xff, 0xfe]), Buffer.from('name')]);
    fs.mkdirSync(badName);
    execFileSync('mkfifo', [path.join(odd, 'pipe')]);
    const server = net.createServer();
    await new Promise<void>((r) => server.listen(path.join(odd, 'sock'), r));
    try {
      const res = await list(odd);
      expect(res.statusCode).toBe(200);
      const data = res.json().data;
      const byName = Object.fromEntries(data.entries.map((e: { name: string }) => [e.name, e]));
      expect(Object.keys(byName).sort()).toEqual([' lead', ' spaced ', 'pipe', 'sock', 'tab\tname', 'trail '].sort());
      // every directory listed opens from the path the listing gives, blanks and all
      for (const e of data.entries.filter((x: { type: string }) => x.type === 'directory')) {
        const again = await list(e.path);
        expect([e.path, again.statusCode]).toEqual([e.path, 200]);
        expect(again.json().data.path).toBe(e.path);
      }
      expect((await list(path.join(odd, ' spaced '))).json().data.entries.map((e: { name: string }) => e.name)).toEqual(['inside.txt']);
      // the name that JSON text cannot carry is not left out silently
      expect(data.skippedNonUtf8).toBe(1);
      expect(data.truncated).toBe(false);
      expect(byName.pipe).toMatchObject({ type: 'fifo', size: 0 });
      expect(byName.pipe.permissions).toMatch(/^p[rwx-]{9}$/);
      expect(byName.sock).toMatchObject({ type: 'socket' });
      expect(byName.sock.permissions).toMatch(/^s[rwx-]{9}$/);
      expect(data).toMatchObject({ totalEntries: 6, directories: 4, files: 0 });
      // a recursive listing counts it too
      expect((await list(root, '&recursive=true&maxDepth=2')).json().data.skippedNonUtf8).toBe(1);
      // blanks before the leading / are dropped; trailing ones only when the path does not exist with them
      expect((await list(` ${odd}/ spaced `)).json().data.path).toBe(path.join(odd, ' spaced '));
      expect((await list(`${odd}/ lead  `)).json().data.path).toBe(path.join(odd, ' lead'));
      expect((await list(`${odd}/spaced`)).statusCode).toBe(404);
    } finally {
      server.close();
      fs.rmdirSync(badName);
      fs.rmSync(odd, { recursive: true, force: true });
    }
  });

  test('the directory of a registered project is allowed', async () => {
    const res = await list(projectRepo);
    expect(res.statusCode).toBe(200);
    expect(res.json().data.entries.map((e: { name: string }) => e.name)).toContain('README.md');
  });
});

describe('GET /api/filesystem/git-repos', () => {
  test('a directory whose name is not UTF-8 is counted as not searched, not walked into unseen; the others are found', async () => {
    const base = path.join(root, 'nonutf');
    fs.mkdirSync(path.join(base, 'good'), { recursive: true });
    execFileSync('git', ['init', '-q', path.join(base, 'good')]);
    fs.mkdirSync(path.join(base, 'tmp-bad'));
    execFileSync('git', ['init', '-q', path.join(base, 'tmp-bad')]);
    const badName = Buffer.concat([Buffer.from(`${base}/bad`), Buffer.from([0xff, 0xfe])]);
    fs.renameSync(path.join(base, 'tmp-bad'), badName);
    try {
      const data = (await repos(base)).json().data;
      expect(data.repositories.map((r: { path: string }) => r.path)).toEqual([path.join(base, 'good')]);
      expect(data).toMatchObject({ skippedNonUtf8: 1, truncated: false });
      expect((await repos(path.join(base, 'good'))).json().data.skippedNonUtf8).toBe(0);
    } finally {
      fs.rmSync(badName, { recursive: true, force: true });
      fs.rmSync(base, { recursive: true, force: true });
    }
  });

  test('finds repositories with their records, skipping node_modules', async () => {
    const res = await repos(root);
    expect(res.statusCode).toBe(200);
    const data = res.json().data;
    expect(data).toMatchObject({ searchPath: root, searchDepth: 3 });
    expect(Number.isInteger(data.searchDuration)).toBe(true);
    const byPath = Object.fromEntries(data.repositories.map((r: { path: string }) => [r.path, r]));
    expect(Object.keys(byPath).sort()).toEqual([path.join(root, 'nested', 'repo2'), path.join(root, 'nested', 'repo2', 'sm'), path.join(root, 'repo1')].sort());
    expect(data.totalFound).toBe(3);
    expectInside(Object.keys(byPath));
    const r1 = byPath[path.join(root, 'repo1')];
    expect(r1).toMatchObject({ name: 'repo1', gitPath: path.join(root, 'repo1', '.git'), isSubmodule: false, branch: 'main', hasUncommittedChanges: true, hasUnpushedCommits: false });
    expect(r1.remotes).toEqual(
      expect.arrayContaining([
        { name: 'origin', url: path.join(tree, 'outside', 'remote.git'), type: 'file' },
        { name: 'upstream', url: 'https://codehost.example/acme/repo1.git', type: 'https' },
      ]),
    );
    expect(r1.lastCommit).toMatchObject({ message: 'first commit', author: 't' });
    expect(r1.lastCommit.hash).toMatch(/^[0-9a-f]{40}$/);
    const r2 = byPath[path.join(root, 'nested', 'repo2')];
    expect(r2).toMatchObject({ branch: 'dev', hasUncommittedChanges: false, hasUnpushedCommits: true, isSubmodule: false });
    expect(r2.remotes).toEqual([{ name: 'origin', url: 'git@codehost.example:acme/repo2.git', type: 'ssh' }]);
    expect(byPath[path.join(root, 'nested', 'repo2', 'sm')].isSubmodule).toBe(true);
  });

  test('maxDepth and includeSubmodules bound the search', async () => {
    const shallow = (await repos(root, '&maxDepth=1')).json().data;
    expect(shallow.repositories.map((r: { name: string }) => r.name)).toEqual(['repo1']);
    const noSub = (await repos(root, '&includeSubmodules=false')).json().data;
    expect(noSub.repositories.map((r: { name: string }) => r.name).sort()).toEqual(['repo1', 'repo2']);
  });

  test('the same access rules apply', async () => {
    expect((await repos(`${root}/%2e%2e`)).statusCode).toBe(403);
    expect((await repos('/etc')).statusCode).toBe(403);
    expect((await repos(path.join(root, 'link-etc'))).statusCode).toBe(403);
    expect((await repos(path.join(root, 'a.txt'))).json().error.code).toBe('NOT_A_DIRECTORY');
    expect((await repos(path.join(root, 'missing'))).statusCode).toBe(404);
  });
});
