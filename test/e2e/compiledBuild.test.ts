/**
 * Production runs compiled JavaScript: `npm run build` into a temp directory (whose node_modules has every package
 * but tsx), then `armada api --service task` and `armada worker` from that output against the test PostgreSQL and
 * Temporal. /health answers, the filesystem search's helper process finds a repository, and a project's clone (a
 * worker activity on the shared queue) completes.
 */
import { execFileSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnArmada } from '../support/armadaProcess';
import { createTestDatabase, env, eventually, makeGitRepo } from '../support/harness';

const { freePort } = require('../support/ports') as { freePort(): Promise<number> };
const ROOT = path.join(__dirname, '..', '..');
jest.setTimeout(300_000);

let out: string;
let home: string;
let database: Awaited<ReturnType<typeof createTestDatabase>>;
const children: ChildProcess[] = [];

beforeAll(async () => {
  out = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-dist-'));
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-dist-home-'));
  execFileSync('npm', ['run', '--silent', 'build', '--', '--out', out], { cwd: ROOT, stdio: 'pipe', timeout: 240_000 });
  database = await createTestDatabase();
});

afterAll(async () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  await new Promise((r) => setTimeout(r, 300));
  await database?.drop();
  fs.rmSync(out, { recursive: true, force: true });
  fs.rmSync(home, { recursive: true, force: true });
});

test('the build holds compiled code, migrations, worker helpers and the workflow bundle; no tsx beside it', () => {
  for (const f of ['bin/armada', 'cli/main.js', 'workers/createWorker.js', 'workers/cpuTasks.js', 'workers/repoInspector.js', 'lib/db/migrations/001_projects_tasks.sql', 'package.json', 'workflow-bundle.js', 'web/dist/index.html']) {
    expect(fs.existsSync(path.join(out, f))).toBe(true);
  }
  expect(fs.existsSync(path.join(out, 'node_modules', 'tsx'))).toBe(false);
  expect(fs.existsSync(path.join(out, 'node_modules', 'fastify'))).toBe(true);
});

test('armada api and armada worker run from the compiled output: /health 200, a clone activity completes, no tsx', async () => {
  const port = await freePort();
  const baseEnv: NodeJS.ProcessEnv = {
    ...process.env,
    NODE_OPTIONS: '',
    ARMADA_RUNTIME: '',
    ARMADA_WORKFLOW_BUNDLE: '',
    ARMADA_HOME: home,
    ARMADA_CONFIG: '',
    DATABASE_URL: database.url,
    TEMPORAL_ADDRESS: env('ARMADA_TEST_TEMPORAL_ADDRESS'),
    ARMADA_TASK_QUEUE: `dist-${process.pid}-${Date.now()}`,
    ARMADA_LOG_LEVEL: 'warn',
    ARMADA_TEMPORAL_METRICS_PORT: '',
  };
  const bin = path.join(out, 'bin', 'armada');
  // a directory the filesystem routes may search, holding one repository (GET /api/filesystem/git-repos below)
  const browsable = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'armada-dist-fs-')));
  execFileSync('git', ['clone', '-q', makeGitRepo(), path.join(browsable, 'inner')]);
  fs.writeFileSync(path.join(home, 'config.json'), JSON.stringify({ filesystem: { allowedPaths: [browsable] } }));
  const api = await spawnArmada(['api', '--service', 'task'], 'listening', { ...baseEnv, ARMADA_TASK_PORT: String(port) }, 120_000, bin);
  children.push(api.child);
  const worker = await spawnArmada(['worker', '--health-port', '0', '--grace', '2'], 'worker-started', baseEnv, 120_000, bin);
  children.push(worker.child);

  for (const child of [api.child, worker.child]) {
    const cmdline = fs.readFileSync(`/proc/${child.pid}/cmdline`, 'utf8').split('\0');
    expect(cmdline[1]).toBe(bin);
    expect(cmdline.join(' ')).not.toContain('tsx');
  }

  const base = `http://127.0.0.1:${port}`;
  expect((await fetch(`${base}/health`)).status).toBe(200);
  expect((await fetch(`${String(worker.ready.health)}/health`)).status).toBe(200);
  // the board's assets come with the build
  const index = await fetch(`${base}/`, { headers: { accept: 'text/html' } });
  expect(index.status).toBe(200);
  const html = await index.text();
  expect(html).toBe(fs.readFileSync(path.join(out, 'web', 'dist', 'index.html'), 'utf8'));
  const script = /src="(\/assets\/[^"]+\.js)"/.exec(html)?.[1];
  expect(script).toBeDefined();
  expect((await fetch(`${base}${script}`)).status).toBe(200);
  // repositories are inspected in a helper process (workers/repoInspector.js), which loads the compiled code too
  const search = await fetch(`${base}/api/filesystem/git-repos?path=${encodeURIComponent(browsable)}`);
  expect(search.status).toBe(200);
  const found = ((await search.json()) as { data: { repositories: { path: string; branch: string }[]; truncated: boolean } }).data;
  expect(found.repositories.map((r) => r.path)).toEqual([path.join(browsable, 'inner')]);
  expect(found.truncated).toBe(false);
  fs.rmSync(browsable, { recursive: true, force: true });

  const bare = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-dist-bare-'));
  execFileSync('git', ['clone', '-q', '--bare', makeGitRepo(), bare]);
  const created = await fetch(`${base}/api/projects`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'Compiled', repository: { url: `file://${bare}` } }),
  });
  expect(created.status).toBe(201);
  const id = ((await created.json()) as { data: { id: string } }).data.id;
  const ready = await eventually(async () => {
    const p = ((await (await fetch(`${base}/api/projects/${id}`)).json()) as { data: { git_repo_path: string; repository: { status: string } } }).data;
    return p.repository.status === 'ready' ? p : undefined;
  }, 60_000);
  expect(fs.existsSync(path.join(ready.git_repo_path, 'README.md'))).toBe(true);
  fs.rmSync(bare, { recursive: true, force: true });
});

test('bin/armada refuses an unknown ARMADA_RUNTIME with a clear message', () => {
  let failure: { status?: number; stderr?: string } = {};
  try {
    execFileSync(process.execPath, [path.join(ROOT, 'bin', 'armada'), '--help'], { env: { ...process.env, ARMADA_RUNTIME: 'bogus' }, stdio: 'pipe', encoding: 'utf8' });
  } catch (err) {
    failure = err as { status?: number; stderr?: string };
  }
  expect(failure.status).toBe(2);
  expect(failure.stderr).toContain('ARMADA_RUNTIME must be dist or tsx, not "bogus"');
});

test('the embedded PostgreSQL of `armada start` starts from the compiled output (its binaries found without tsx)', () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-dist-pg-'));
  fs.rmSync(dataDir, { recursive: true, force: true }); // a fresh data directory: initdb makes it
  // the compiled module in a plain node process: start, one query, stop. A dynamic import() compiled to CommonJS
  // became a require() of a file: URL, and this failed with "Cannot find module 'file:///…/binary.js'"
  const script = `
    const { startEmbeddedPostgres } = require(${JSON.stringify(path.join(out, 'lib', 'runtime', 'embeddedPostgres.js'))});
    const { createLogger } = require(${JSON.stringify(path.join(out, 'lib', 'logger.js'))});
    const { Client } = require('pg');
    (async () => {
      const pg = await startEmbeddedPostgres({ dataDir: process.argv[1], port: Number(process.argv[2]), logger: createLogger('silent') });
      const c = new Client({ connectionString: pg.url });
      await c.connect();
      const { rows } = await c.query('SELECT 6 * 7 AS n');
      await c.end();
      await pg.stop();
      process.stdout.write(JSON.stringify(rows[0]));
    })().catch((e) => { process.stderr.write(String(e && e.stack || e)); process.exit(1); });`;
  return freePort().then((port) => {
    try {
      const outText = execFileSync(process.execPath, ['-e', script, dataDir, String(port)], { cwd: out, env: { ...process.env, NODE_OPTIONS: '' }, encoding: 'utf8', timeout: 120_000 });
      expect(JSON.parse(outText)).toEqual({ n: 42 });
    } finally {
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
