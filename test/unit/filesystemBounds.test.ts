/** Bounds of filesystem walks (issue 14): entry cap and time budget say `truncated`, the walk gate queues then refuses. */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { buildAccessPolicy } from '../../lib/fs/accessPolicy';
import { listDirectory, MAX_ENTRIES } from '../../lib/fs/directoryListing';
import { discoverGitRepositories, inspectRepository } from '../../lib/fs/gitDiscovery';
import { createRepoInspector } from '../../lib/fs/repoInspector';
import { createWalkGate } from '../../lib/fs/walkGate';

let tree: string;

beforeAll(() => {
  tree = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'armada-bounds-')));
  for (let i = 0; i < 30; i++) fs.mkdirSync(path.join(tree, 'many', `d${String(i).padStart(2, '0')}`, 'x'), { recursive: true });
  execFileSync('git', ['init', '-q', path.join(tree, 'many', 'd29')]);
  fs.mkdirSync(path.join(tree, 'wide'));
  for (let i = 0; i < MAX_ENTRIES + 10; i++) fs.writeFileSync(path.join(tree, 'wide', `f${i}`), '');
});

afterAll(() => fs.rmSync(tree, { recursive: true, force: true }));

const policyFor = (root: string) => buildAccessPolicy({ home: '/nonexistent-home', allowedPaths: [root], projectPaths: [] });

describe('repository discovery bounds', () => {
  test('without a bound hit the whole tree is walked and truncated is false', async () => {
    const r = await discoverGitRepositories(path.join(tree, 'many'), await policyFor(tree), { maxDepth: 5, includeSubmodules: true });
    expect(r.truncated).toBe(false);
    expect(r.repositories.map((x) => x.name)).toEqual(['d29']);
  });

  test('the entry cap stops the walk with truncated: true', async () => {
    const r = await discoverGitRepositories(path.join(tree, 'many'), await policyFor(tree), { maxDepth: 5, includeSubmodules: true, maxEntries: 10 });
    expect(r.truncated).toBe(true);
    expect(r.repositories).toEqual([]); // d29 lies beyond the first 10 entries read
  });

  test('an exhausted time budget stops the walk with truncated: true', async () => {
    const r = await discoverGitRepositories(path.join(tree, 'many'), await policyFor(tree), { maxDepth: 5, includeSubmodules: true, timeBudgetMs: -1 });
    expect(r.truncated).toBe(true);
    expect(r.repositories).toEqual([]);
  });
});

describe('repository inspector helper process', () => {
  test('gives the record an in-process inspection gives, null for a directory that is not the one found; refuses work once closed', async () => {
    const inspector = createRepoInspector();
    const repo = path.join(tree, 'many', 'd29');
    const st = fs.statSync(repo);
    const found = { dev: st.dev, ino: st.ino };
    try {
      const record = await inspector.inspect(repo, found);
      expect(record).toMatchObject({ path: repo, gitPath: path.join(repo, '.git') });
      expect(record).toEqual(await inspectRepository(repo, found));
      // another directory than the one the walk found holds the path now (another inode): not inspected
      expect(await inspector.inspect(repo, { dev: st.dev, ino: st.ino + 1 })).toBeNull();
      const viaHelper = await discoverGitRepositories(path.join(tree, 'many'), await policyFor(tree), { maxDepth: 5, includeSubmodules: true, inspect: inspector.inspect });
      expect(viaHelper).toMatchObject({ truncated: false, totalFound: 1 });
    } finally {
      await inspector.close();
    }
    await expect(inspector.inspect(repo, found)).rejects.toThrow('closed');
  });
});

describe('directory listing bounds', () => {
  test('a directory wider than the entry cap lists the cap and says truncated', async () => {
    const r = await listDirectory(path.join(tree, 'wide'), await policyFor(tree), { showHidden: false, recursive: false, maxDepth: 1 });
    expect(r.truncated).toBe(true);
    expect(r.totalEntries).toBe(MAX_ENTRIES);
  });

  test('an exhausted time budget ends a listing with truncated: true', async () => {
    const r = await listDirectory(path.join(tree, 'many'), await policyFor(tree), { showHidden: false, recursive: true, maxDepth: 3, timeBudgetMs: -1 });
    expect(r.truncated).toBe(true);
    expect(r.entries).toEqual([]);
  });
});

describe('walk gate', () => {
  test('runs `concurrency` at once, queues `queue` more, refuses the next with 503 BUSY', async () => {
    const gate = createWalkGate({ concurrency: 1, queue: 1, maxWaitMs: 10_000 });
    let open!: () => void;
    const held = new Promise<void>((r) => {
      open = r;
    });
    const order: string[] = [];
    const first = gate.run(async () => {
      order.push('first');
      await held;
    });
    const second = gate.run(async () => {
      order.push('second');
    });
    await expect(gate.run(async () => 'third')).rejects.toMatchObject({ statusCode: 503, code: 'BUSY', details: { retryAfterSeconds: 1 } });
    expect({ running: gate.running(), waiting: gate.waiting() }).toEqual({ running: 1, waiting: 1 });
    open();
    await Promise.all([first, second]);
    expect(order).toEqual(['first', 'second']);
    expect({ running: gate.running(), waiting: gate.waiting() }).toEqual({ running: 0, waiting: 0 });
  });

  test('a caller that waits longer than maxWaitMs gets 503 BUSY and leaves the queue', async () => {
    const gate = createWalkGate({ concurrency: 1, queue: 5, maxWaitMs: 100 });
    let open!: () => void;
    const first = gate.run(() => new Promise<void>((r) => (open = r)));
    await expect(gate.run(async () => 'late')).rejects.toMatchObject({ code: 'BUSY' });
    expect(gate.waiting()).toBe(0);
    open();
    await first;
    await expect(gate.run(async () => 'now')).resolves.toBe('now');
  });
});
