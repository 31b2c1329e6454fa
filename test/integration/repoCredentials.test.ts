/**
 * A project made from a repository URL with credentials (http://user:secret@host/…), against a real git smart-HTTP
 * server that requires Basic auth: the clone and later pushes authenticate, and the secret lives only sealed in the
 * database. It is nowhere else: not in the managed clone's .git (its origin is the URL without userinfo), not in the
 * database row as readable text, not in Temporal's history of the clone, the attempt or the push, not in an API
 * response or a log line, and not in an agent's environment or what it can read of the repository. Before, the URL
 * was stored as given in the row, in the clone's remote.origin.url and in the clone workflow's input.
 * A project stored before that (its row and its clone's .git/config holding the URL as given) is sealed when the
 * task service starts and its clone's origin is cleaned when a worker starts, and its pushes still authenticate.
 */
import { execFile } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { buildService } from '../../api/services';
import { storeCodehostToken } from '../../lib/codehost/tokens';
import { createLogger } from '../../lib/logger';
import { createMetrics } from '../../lib/metrics';
import { managedClonePath } from '../../lib/projects/managedClones';
import type { RunningWorkers } from '../../workers/createWorker';
import { startFakeCodehost, type FakeCodehost } from '../support/fakeCodehost';
import { startGitHttpServer, type GitHttpServer } from '../support/gitHttpServer';
import { eventually, makeGitRepo, startStackWorkers, startTestStack, type TestStack } from '../support/harness';

const USER = 'deploy';
const SECRET = `s3cret-${crypto.randomBytes(6).toString('hex')}`;
/** The secret as an Authorization header carries it. */
const SECRET_BASIC = Buffer.from(`${USER}:${SECRET}`).toString('base64');
const EMAIL = 'dev@example.com';

/** An agent that writes its environment and the repository's config (the clone's .git/config) to $DUMP_DIR/<attempt>. */
const DUMP_AGENT = `
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');
process.stdin.resume();
process.stdin.on('end', () => {
  const common = execFileSync('git', ['rev-parse', '--path-format=absolute', '--git-common-dir'], { encoding: 'utf8' }).trim();
  const dump = { env: process.env, config: fs.readFileSync(path.join(common, 'config'), 'utf8'), listed: execFileSync('git', ['config', '--list', '--show-origin'], { encoding: 'utf8' }) };
  fs.writeFileSync(path.join(process.env.DUMP_DIR, process.env.ARMADA_ATTEMPT_ID + '.json'), JSON.stringify(dump));
  fs.writeFileSync('change-' + process.env.ARMADA_ATTEMPT_ID + '.txt', 'made by the agent\\n');
});
`;

const gitEnv = { ...process.env, GIT_TERMINAL_PROMPT: '0', GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@example.com', GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@example.com' };
/** git from the test process without blocking it (the HTTP server runs in this process). */
const git = (cwd: string, ...args: string[]) =>
  new Promise<string>((resolve, reject) =>
    execFile('git', args, { cwd, env: gitEnv }, (err, stdout, stderr) => (err ? reject(new Error(`git ${args.join(' ')}: ${stderr}`)) : resolve(stdout.trim()))),
  );

let tmp: string;
let bare: string;
let dumps: string;
let server: GitHttpServer;
let fake: FakeCodehost;
let stack: TestStack;
let workers: RunningWorkers;
let task: FastifyInstance;
let plainUrl: string;
let remoteUrl: string;
const logLines: string[] = [];
const captureLogger = createLogger('trace', 'armada', { write: (line: string) => void logLines.push(line) });
/** Every response body the test got. */
const bodies: string[] = [];

async function inject(method: 'GET' | 'POST', url: string, payload?: unknown) {
  const r = await task.inject({ method, url, payload: payload as object, headers: { 'x-user-email': EMAIL } });
  bodies.push(r.body);
  return r;
}

/** The strings and byte fields (decoded as UTF-8: payloads are JSON bytes) of a workflow's history, joined. */
async function historyText(workflowId: string): Promise<string> {
  const history = await (await stack.temporal.client()).workflow.getHandle(workflowId).fetchHistory();
  const out: string[] = [];
  const walk = (v: unknown): void => {
    if (v === null || v === undefined) return;
    if (v instanceof Uint8Array) out.push(Buffer.from(v).toString('utf8'));
    else if (typeof v === 'string') out.push(v);
    else if (typeof v === 'object') for (const x of Object.values(v)) walk(x);
  };
  walk(history);
  return out.join('\n');
}

/** Every file under `dir`, read as bytes and searched for the secret: the paths holding it. */
function filesHolding(dir: string, needle: string): string[] {
  const found: string[] = [];
  for (const entry of fs.readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile()) continue;
    const file = path.join(entry.parentPath, entry.name);
    if (fs.readFileSync(file).includes(needle)) found.push(file);
  }
  return found;
}

function expectNoSecret(where: string, text: string): void {
  expect({ where, holdsSecret: text.includes(SECRET) || text.includes(SECRET_BASIC) }).toEqual({ where, holdsSecret: false });
}

/** Runs an attempt of a new task with the dump agent; answers its id and what the agent saw. */
async function runDumpAttempt(projectId: string): Promise<{ attemptId: string; dump: string }> {
  const t = await inject('POST', '/api/tasks', { projectId, title: 'Look around' });
  expect(t.statusCode).toBe(201);
  const s = await inject('POST', `/api/tasks/${t.json().data.id}/start`, { llm: 'dump' });
  expect(s.statusCode).toBe(200);
  const attemptId = s.json().data.attemptId as string;
  const a = await eventually(async () => {
    const body = (await inject('GET', `/api/attempts/${attemptId}`)).json().data;
    return ['completed', 'failed'].includes(body.status) ? body : undefined;
  }, 60_000, 200);
  expect([a.status, a.error]).toEqual(['completed', null]);
  return { attemptId, dump: fs.readFileSync(path.join(dumps, `${attemptId}.json`), 'utf8') };
}

/** create-pr of an attempt: pushes its branch to the credentialed remote, then opens the pull request. */
async function createPr(attemptId: string): Promise<void> {
  const before = server.requests.filter((r) => r.authorized && r.path.endsWith('/git-receive-pack')).length;
  const r = await inject('POST', `/api/task-attempts/${attemptId}/create-pr`, { title: 'From the agent' });
  expect([r.statusCode, r.json().success]).toEqual([200, true]);
  const branch = (await inject('GET', `/api/attempts/${attemptId}`)).json().data.branch as string;
  expect(await git(tmp, '--git-dir', bare, 'rev-parse', '--verify', `refs/heads/${branch}`)).toMatch(/^[0-9a-f]{40}$/);
  // the push went through the server and authenticated
  expect(server.requests.filter((q) => q.authorized && q.path.endsWith('/git-receive-pack')).length).toBeGreaterThan(before);
}

beforeAll(async () => {
  tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'armada-repocreds-')));
  bare = path.join(tmp, 'srv', 'acme', 'widgets.git');
  fs.mkdirSync(path.dirname(bare), { recursive: true });
  await git(tmp, 'init', '-q', '--bare', '-b', 'main', bare);
  const seed = makeGitRepo();
  await git(seed, 'push', '-q', bare, 'main');
  fs.rmSync(seed, { recursive: true, force: true });
  dumps = path.join(tmp, 'dumps');
  fs.mkdirSync(dumps);
  const agent = path.join(tmp, 'dump-agent.js');
  fs.writeFileSync(agent, DUMP_AGENT);
  server = await startGitHttpServer(path.join(tmp, 'srv'), USER, SECRET);
  remoteUrl = `${server.url}/acme/widgets.git`;
  plainUrl = remoteUrl.replace('http://', `http://${USER}:${SECRET}@`);
  fake = await startFakeCodehost([{ owner: 'acme', name: 'widgets', bare, defaultBranch: 'main', private: true }]);
  stack = await startTestStack({
    services: ['task'],
    worker: false,
    env: { ARMADA_CODEHOST_API_URL: fake.url, ARMADA_CODEHOST_OAUTH_URL: `${fake.url}/`, ARMADA_CODEHOST_CLIENT_ID: fake.clientId },
    file: {
      agents: { dump: { command: [process.execPath, agent], format: 'text', env: { DUMP_DIR: dumps } } },
      attempts: { heartbeatTimeoutMs: 5000, killGraceMs: 1000 },
    },
    logger: captureLogger,
  });
  task = stack.app('task');
  workers = await startStackWorkers(stack, { logger: captureLogger });
  await storeCodehostToken(stack.db, stack.keys.encryption, EMAIL, { access_token: fake.token, token_type: 'bearer', scope: 'repo' });
}, 120_000);

afterAll(async () => {
  await workers?.stop();
  await stack?.close();
  await fake?.close();
  await server?.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

test('a project from a credentialed URL is cloned and pushed to, and the secret is nowhere but sealed in the database', async () => {
  const created = await inject('POST', '/api/projects', { name: 'private-widgets', repository: { url: plainUrl, branch: 'main' } });
  expect(created.statusCode).toBe(201);
  const id = created.json().data.id as string;
  const shown = remoteUrl.replace('http://', `http://${USER}:***@`);
  expect(created.json().data.repository.url).toBe(shown);
  const ready = await eventually(async () => {
    const p = (await inject('GET', `/api/projects/${id}`)).json().data;
    return p.repository.status !== 'cloning' ? p : undefined;
  }, 90_000, 200);
  expect([ready.repository.status, ready.repository.error]).toEqual(['ready', undefined]);
  expect(ready.repository.url).toBe(shown);

  // the clone: made through the server with the credentials, its origin without them, and nothing in .git holds them
  const clone = managedClonePath(stack.config.home, id);
  expect(fs.readFileSync(path.join(clone, 'README.md'), 'utf8')).toBe('# test\n');
  expect(server.requests.some((r) => r.authorized && r.path.endsWith('/git-upload-pack'))).toBe(true);
  expect(await git(clone, 'remote', 'get-url', 'origin')).toBe(remoteUrl);
  expect(filesHolding(path.join(clone, '.git'), SECRET)).toEqual([]);
  expect(filesHolding(path.join(clone, '.git'), SECRET_BASIC)).toEqual([]);

  // the row: the URL as shown, the secret only sealed
  const row = (await stack.db.query('SELECT * FROM projects WHERE id = $1', [id])).rows[0];
  expect(row.repo_url).toBe(shown);
  expectNoSecret('the project row', JSON.stringify(row));

  // Temporal: the clone workflow's input and every event of its history
  const cloneHistory = await historyText(`project-clone:${id}`);
  expect(cloneHistory).toContain(id); // the decoding reads the payloads
  expectNoSecret('the clone workflow history', cloneHistory);

  // an agent in a worktree of the clone: neither its environment nor the repository's config holds the secret
  const { attemptId, dump } = await runDumpAttempt(id);
  expect(dump).toContain(remoteUrl); // the config was read
  expect(dump).toContain('ARMADA_ATTEMPT_ID'); // and the environment
  expectNoSecret("the agent's environment and repository config", dump);

  // a later push (create-pr) still authenticates, and leaves the secret nowhere either
  await createPr(attemptId);
  expectNoSecret('the push workflow history', await historyText(`push:${attemptId}`));
  expectNoSecret('the attempt workflow history', await historyText(`attempt:${attemptId}`));
  expect(filesHolding(path.join(clone, '.git'), SECRET)).toEqual([]);

  bodies.push((await inject('GET', '/api/projects')).body);
  for (const body of bodies) expectNoSecret('a response', body);
  expectNoSecret('the logs', logLines.join(''));
}, 240_000);

test("a project stored before sealing: its row is sealed when the task service starts, its clone's origin cleaned when a worker starts, and pushes still authenticate", async () => {
  // what an older Armada left: the row and the clone's origin holding the URL as given
  const id = crypto.randomUUID();
  const clone = managedClonePath(stack.config.home, id);
  fs.mkdirSync(path.dirname(clone), { recursive: true });
  await git(tmp, 'clone', '-q', plainUrl, clone);
  expect(fs.readFileSync(path.join(clone, '.git', 'config'), 'utf8')).toContain(SECRET);
  await stack.db.query(
    `INSERT INTO projects (id, name, description, repo_url, repo_branch, git_repo_path, clone_status, last_sync) VALUES ($1, 'legacy-widgets', '', $2, 'main', $3, 'ready', now())`,
    [id, plainUrl, clone],
  );

  // a restart: the task service, then the worker
  const restarted = await buildService('task', { db: stack.db, config: stack.config, keys: stack.keys, temporal: stack.temporal, logger: captureLogger, metrics: createMetrics() });
  await restarted.ready();
  try {
    const row = await eventually(async () => {
      const r = (await stack.db.query('SELECT * FROM projects WHERE id = $1', [id])).rows[0];
      return JSON.stringify(r).includes(SECRET) ? undefined : r;
    }, 30_000, 200);
    expect(row.repo_url).toBe(remoteUrl.replace('http://', `http://${USER}:***@`));
    await workers.stop();
    workers = await startStackWorkers(stack, { logger: captureLogger });
    await eventually(async () => !fs.readFileSync(path.join(clone, '.git', 'config'), 'utf8').includes(SECRET), 30_000, 200);
    expect(await git(clone, 'remote', 'get-url', 'origin')).toBe(remoteUrl);

    task = restarted;
    const { attemptId, dump } = await runDumpAttempt(id);
    expect(dump).toContain(remoteUrl);
    expectNoSecret("the agent's environment and repository config", dump);
    await createPr(attemptId);
    expect(filesHolding(path.join(clone, '.git'), SECRET)).toEqual([]);
    for (const body of bodies) expectNoSecret('a response', body);
    expectNoSecret('the logs', logLines.join(''));
  } finally {
    task = stack.app('task');
    await restarted.close();
  }
}, 240_000);
