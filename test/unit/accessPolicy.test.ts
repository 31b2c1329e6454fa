import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { buildAccessPolicy, normaliseRequestedPath, resolveAllowedDirectory } from '../../lib/fs/accessPolicy';
import { listDirectory } from '../../lib/fs/directoryListing';
import { discoverGitRepositories, inspectRepository } from '../../lib/fs/gitDiscovery';
import { openDirectory } from '../../lib/fs/openedDirectory';

describe('access policy defaults', () => {
  test('home, common project dirs and project dirs are allowed; /etc, /var, /sys, /proc and / never', async () => {
    const policy = await buildAccessPolicy({ home: '/home/ann', projectPaths: ['/srv/repos/app'] });
    expect(policy.permits('/home/ann')).toBe(true);
    expect(policy.permits('/home/ann/projects/x')).toBe(true);
    expect(policy.permits('/workspace/x')).toBe(true);
    expect(policy.permits('/srv/repos/app/src')).toBe(true);
    expect(policy.permits('/srv/repos/other')).toBe(false);
    expect(policy.permits('/home/annabel')).toBe(false);
    for (const p of ['/', '/etc', '/etc/passwd', '/var/log', '/sys', '/proc/1', '/tmp']) expect(policy.permits(p)).toBe(false);
  });

  test('always-blocked paths win over allowedPaths, blockedPaths are added', async () => {
    const policy = await buildAccessPolicy({ home: '/home/ann', allowedPaths: ['/', '/etc', '/data'], blockedPaths: ['/data/private'], projectPaths: [] });
    expect(policy.permits('/etc/hosts')).toBe(false);
    expect(policy.permits('/')).toBe(false);
    expect(policy.permits('/data/x')).toBe(true);
    expect(policy.permits('/data/private/x')).toBe(false);
    expect(policy.permits('/home/ann')).toBe(false); // allowedPaths replaces the defaults
  });

  test('requested paths are decoded until stable and normalised', () => {
    expect(normaliseRequestedPath('/a/%2e%2e/b', '/h')).toBe('/b');
    expect(normaliseRequestedPath('/a/%252e%252e/b', '/h')).toBe('/b');
    expect(normaliseRequestedPath('//a//b/', '/h')).toBe('/a/b');
    expect(normaliseRequestedPath('~/x', '/h')).toBe('/h/x');
    expect(() => normaliseRequestedPath('a/b', '/h')).toThrow('absolute');
  });
});

/**
 * A directory swapped for a symbolic link between the request's check (resolveAllowedDirectory) and the read: the
 * read goes through a handle whose real place is checked, so what lies outside the roots is refused, not read. The
 * swap is made between the two calls, as it would land between them in a request.
 */
describe('a directory swapped for a link to outside the roots after the check', () => {
  let base: string;
  let roots: string;
  let outside: string;
  const listing = { showHidden: true, recursive: true, maxDepth: 3 };
  const policy = () => buildAccessPolicy({ home: '/nonexistent-home', allowedPaths: [roots], projectPaths: [] });
  const swapForLink = (dir: string, target: string) => {
    fs.renameSync(dir, `${dir}-before`);
    fs.symlinkSync(target, dir);
  };

  beforeEach(() => {
    base = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'armada-swap-')));
    roots = path.join(base, 'roots');
    outside = path.join(base, 'outside');
    fs.mkdirSync(path.join(roots, 'proj', 'sub'), { recursive: true });
    fs.writeFileSync(path.join(roots, 'proj', 'inside.txt'), '');
    fs.mkdirSync(path.join(outside, 'proj', 'sub'), { recursive: true });
    fs.writeFileSync(path.join(outside, 'proj', 'secret.txt'), '');
    execFileSync('git', ['init', '-q', path.join(outside, 'proj', 'sub')]);
  });
  afterEach(() => fs.rmSync(base, { recursive: true, force: true }));

  test('the listing of a checked directory swapped for such a link is 403 ACCESS_DENIED, its content unread', async () => {
    const p = await policy();
    const dir = await resolveAllowedDirectory(path.join(roots, 'proj'), p, '/nonexistent-home');
    expect((await listDirectory(dir, p, listing)).entries.map((e) => e.name)).toEqual(['inside.txt', 'sub']);
    swapForLink(path.join(roots, 'proj'), path.join(outside, 'proj'));
    await expect(listDirectory(dir, p, listing)).rejects.toMatchObject({ statusCode: 403, code: 'ACCESS_DENIED' });
    // what the request's check says of it now
    await expect(resolveAllowedDirectory(path.join(roots, 'proj'), p, '/nonexistent-home')).rejects.toMatchObject({ statusCode: 403, code: 'ACCESS_DENIED' });
  });

  test('so is a directory whose parent was swapped, and a discovery started at either', async () => {
    const p = await policy();
    const dir = await resolveAllowedDirectory(path.join(roots, 'proj', 'sub'), p, '/nonexistent-home');
    const root = await resolveAllowedDirectory(path.join(roots, 'proj'), p, '/nonexistent-home');
    expect((await discoverGitRepositories(root, p, { maxDepth: 2, includeSubmodules: true })).totalFound).toBe(0);
    swapForLink(path.join(roots, 'proj'), path.join(outside, 'proj'));
    await expect(listDirectory(dir, p, listing)).rejects.toMatchObject({ statusCode: 403, code: 'ACCESS_DENIED' });
    await expect(discoverGitRepositories(dir, p, { maxDepth: 2, includeSubmodules: true })).rejects.toMatchObject({ statusCode: 403, code: 'ACCESS_DENIED' });
    await expect(discoverGitRepositories(root, p, { maxDepth: 2, includeSubmodules: true })).rejects.toMatchObject({ statusCode: 403, code: 'ACCESS_DENIED' });
  });

  test('a swap inside the roots lists where the directory really is', async () => {
    const p = await policy();
    const dir = await resolveAllowedDirectory(path.join(roots, 'proj'), p, '/nonexistent-home');
    fs.mkdirSync(path.join(roots, 'other'));
    fs.writeFileSync(path.join(roots, 'other', 'o.txt'), '');
    swapForLink(path.join(roots, 'proj'), path.join(roots, 'other'));
    const r = await listDirectory(dir, p, listing);
    expect(r.path).toBe(path.join(roots, 'other'));
    expect(r.entries.map((e) => e.path)).toEqual([path.join(roots, 'other', 'o.txt')]);
  });

  test('openDirectory reads the directory it opened, wherever it went since, and says where it is', async () => {
    const opened = await openDirectory(path.join(roots, 'proj'));
    try {
      expect(opened.path).toBe(path.join(roots, 'proj'));
      // moved away and replaced by a link to outside: reads through the handle still see the opened directory
      swapForLink(path.join(roots, 'proj'), path.join(outside, 'proj'));
      expect(fs.readdirSync(opened.via).sort()).toEqual(['inside.txt', 'sub']);
      expect(fs.readdirSync(path.join(roots, 'proj')).sort()).toEqual(['secret.txt', 'sub']); // what a read by path gets
      expect(fs.lstatSync(path.join(opened.via, 'sub')).isDirectory()).toBe(true);
    } finally {
      await opened.close();
    }
    // opened again now: its real place is outside; a walk's noFollow refuses the link itself; a file is no directory
    const again = await openDirectory(path.join(roots, 'proj'));
    await again.close();
    expect(again.path).toBe(path.join(outside, 'proj'));
    await expect(openDirectory(path.join(roots, 'proj'), { noFollow: true })).rejects.toMatchObject({ code: expect.stringMatching(/^(ENOTDIR|ELOOP)$/) });
    await expect(openDirectory(path.join(roots, 'proj-before', 'inside.txt'))).rejects.toMatchObject({ code: 'ENOTDIR' });
  });

  /** Runs `then` on what fs.promises' `name` gives back, before the caller sees it: a swap made at that very moment. */
  const afterCall = (name: 'readlink' | 'realpath' | 'lstat', then: (args: unknown[], result: unknown) => void) => {
    const real = fsp[name] as (...a: unknown[]) => Promise<unknown>;
    return jest.spyOn(fsp, name).mockImplementation((async (...a: unknown[]) => {
      const result = await real(...a);
      then(a, result);
      return result;
    }) as never);
  };

  test('a repository swapped for a link between the walk and its inspection is left out, not inspected where the link points', async () => {
    const p = await policy();
    const outsideRepo = path.join(outside, 'proj', 'sub');
    execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.com', 'commit', '-q', '--allow-empty', '-m', 'outside secret'], { cwd: outsideRepo });
    for (const r of ['sub', 'keep']) execFileSync('git', ['init', '-q', path.join(roots, 'proj', r)]);
    const root = await resolveAllowedDirectory(path.join(roots, 'proj'), p, '/nonexistent-home');
    const r = await discoverGitRepositories(root, p, {
      maxDepth: 2,
      includeSubmodules: true,
      // the swap lands after the walk found `sub` and before it is inspected, as a racing writer's would
      inspect: async (dir, found) => {
        if (dir.endsWith('/sub')) swapForLink(dir, outsideRepo);
        return inspectRepository(dir, found);
      },
    });
    expect(fs.lstatSync(path.join(roots, 'proj', 'sub')).isSymbolicLink()).toBe(true);
    // what an inspection by the path would have read: the repository outside
    expect(execFileSync('git', ['log', '-1', '--format=%s'], { cwd: path.join(roots, 'proj', 'sub') }).toString().trim()).toBe('outside secret');
    expect(r.repositories.map((x) => x.path)).toEqual([path.join(roots, 'proj', 'keep')]);
    expect(r.truncated).toBe(false);
    expect(JSON.stringify(r)).not.toContain(outside);
  });

  test('so is one whose parent was swapped for a link to a tree holding a repository at the same place', async () => {
    const p = await policy();
    execFileSync('git', ['init', '-q', path.join(roots, 'proj', 'sub')]);
    const root = await resolveAllowedDirectory(roots, p, '/nonexistent-home');
    let swapped = false;
    const r = await discoverGitRepositories(root, p, {
      maxDepth: 3,
      includeSubmodules: true,
      inspect: async (dir, found) => {
        if (!swapped) swapForLink(path.join(roots, 'proj'), path.join(outside, 'proj'));
        swapped = true;
        return inspectRepository(dir, found);
      },
    });
    // the path names the outside repository now (its .git is there), and the inspection left it out
    expect(fs.existsSync(path.join(roots, 'proj', 'sub', '.git'))).toBe(true);
    expect(fs.realpathSync(path.join(roots, 'proj', 'sub'))).toBe(path.join(outside, 'proj', 'sub'));
    expect(r.repositories).toEqual([]);
  });

  test('a link re-pointed to outside the roots right after its target was checked shows the target checked', async () => {
    const p = await policy();
    const inside = path.join(roots, 'proj', 'inside.txt'); // empty
    const secret = path.join(outside, 'proj', 'secret.txt');
    fs.writeFileSync(secret, 'x'.repeat(12345));
    const link = path.join(roots, 'proj', 'link');
    fs.symlinkSync(inside, link);
    const dir = await resolveAllowedDirectory(path.join(roots, 'proj'), p, '/nonexistent-home');
    // the moment the target's real place has been read (from a handle's /proc link, or by realpath), the link is
    // re-pointed at the outside file: a stat by the link's name after that would describe the outside file
    const repoint = (_args: unknown[], place: unknown) => {
      if (place !== inside || fs.readlinkSync(link) !== inside) return;
      fs.unlinkSync(link);
      fs.symlinkSync(secret, link);
    };
    const spies = [afterCall('readlink', repoint), afterCall('realpath', repoint)];
    let r: Awaited<ReturnType<typeof listDirectory>>;
    try {
      r = await listDirectory(dir, p, { showHidden: false, recursive: false, maxDepth: 1 });
    } finally {
      for (const s of spies) s.mockRestore();
    }
    expect(fs.readlinkSync(link)).toBe(secret); // re-pointed during the listing
    expect(r.entries.find((e) => e.name === 'link')).toMatchObject({ type: 'file', size: 0, permissions: expect.stringMatching(/^-/) });
    expect(r.entries.some((e) => e.size === 12345)).toBe(false);
  });

  test('a directory swapped for a link to an outside repository right after its lstat is not shown as a repository', async () => {
    const p = await policy();
    const plain = path.join(roots, 'proj', 'plain');
    fs.mkdirSync(plain);
    const dir = await resolveAllowedDirectory(path.join(roots, 'proj'), p, '/nonexistent-home');
    const swap = (args: unknown[], st: unknown) => {
      if (String(args[0]).endsWith('/plain') && (st as { isDirectory(): boolean }).isDirectory()) swapForLink(plain, path.join(outside, 'proj', 'sub'));
    };
    const spy = afterCall('lstat', swap);
    let r: Awaited<ReturnType<typeof listDirectory>>;
    try {
      r = await listDirectory(dir, p, { showHidden: false, recursive: false, maxDepth: 1 });
    } finally {
      spy.mockRestore();
    }
    expect(fs.existsSync(path.join(plain, '.git'))).toBe(true); // through the link: the outside repository
    expect(r.entries.find((e) => e.name === 'plain')).toMatchObject({ type: 'directory', isGitRepo: false });
    expect(r.gitRepos).toBe(0);
  });
});
