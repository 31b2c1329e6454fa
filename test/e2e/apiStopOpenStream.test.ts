/**
 * `armada api` exits after SIGINT or SIGTERM once its shutdown steps have run, also when one of them went on without
 * a part: a board still following a running process's log (SSE) keeps its connection open, so the HTTP step is left
 * after its limit and the socket stays. The process used to stay alive on that handle after "going on without it".
 */
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { insertAttempt } from '../../lib/db/attempts';
import { insertProcess } from '../../lib/db/processes';
import { spawnArmada } from '../support/armadaProcess';
import { createTestDatabase, makeGitRepo, env as testEnv } from '../support/harness';
const { freePort } = require('../support/ports') as { freePort(): Promise<number> };

jest.setTimeout(240_000);

let home: string;
let db: Awaited<ReturnType<typeof createTestDatabase>>;

beforeAll(async () => {
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-api-stop-'));
  db = await createTestDatabase();
});
afterAll(async () => {
  await db?.drop();
  fs.rmSync(home, { recursive: true, force: true });
});

async function post(base: string, url: string, body: unknown): Promise<string> {
  const res = await fetch(`${base}${url}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const text = await res.text();
  if (res.status !== 201) throw new Error(`POST ${url}: ${res.status} ${text}`);
  return (JSON.parse(text) as { data: { id: string } }).data.id;
}

/** An SSE client of `url` that reads and never closes; resolves once the stream has begun. */
function followForever(url: string): Promise<http.ClientRequest> {
  return new Promise((resolve, reject) => {
    const req = http.get(url, (res) => {
      if (res.statusCode !== 200) return reject(new Error(`GET ${url}: ${res.statusCode}`));
      res.once('data', () => resolve(req));
      res.resume();
    });
    req.on('error', () => undefined); // the server going away ends it; that is the point
    req.once('error', reject);
  });
}

function exitOf(child: ChildProcess): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve({ code: child.exitCode, signal: child.signalCode });
    child.once('exit', (code, signal) => resolve({ code, signal }));
  });
}

test.each(['SIGINT', 'SIGTERM'] as const)('%s with a log stream still open: the shutdown steps run, then the process exits 0', async (signal) => {
  const port = await freePort();
  const env = {
    ...process.env,
    ARMADA_HOME: home,
    ARMADA_CONFIG: '',
    ARMADA_WEB_DIR: home, // no board needed (and none built)
    DATABASE_URL: db.url,
    TEMPORAL_ADDRESS: testEnv('ARMADA_TEST_TEMPORAL_ADDRESS'),
    ARMADA_HOST: '127.0.0.1',
    ARMADA_TASK_PORT: String(port),
    ARMADA_LOG_LEVEL: 'info',
    ARMADA_LOG_FORMAT: 'json',
  };
  const api = await spawnArmada(['api', '--service', 'task'], 'listening', env, 120_000);
  let stderr = '';
  api.child.stderr?.on('data', (d) => (stderr += d.toString()));
  const exited = exitOf(api.child);
  let follower: http.ClientRequest | undefined;
  try {
    const base = `http://127.0.0.1:${port}`;
    const projectId = await post(base, '/api/projects', { name: `stop-${signal}`, repository: { url: makeGitRepo() } });
    const taskId = await post(base, '/api/tasks', { projectId, title: 'a running agent' });
    // a running process, as a worker records one: its log stream follows it until it ends, which it never does here
    const attemptId = `att-stop-${signal}`;
    const processId = `proc-stop-${signal}`;
    await insertAttempt(db.pool, { id: attemptId, taskId, llm: 'scripted', model: null, status: 'running', branchPrefix: 'armada', baseBranch: 'main', options: {}, description: '' });
    await insertProcess(db.pool, { id: processId, attemptId, taskId, llm: 'scripted', model: null, kind: 'initial', prompt: 'p' });
    follower = await followForever(`${base}/api/events/processes/${processId}/logs`);

    process.kill(api.child.pid as number, signal);
    // the http step's limit is 15 s and the others' 5 s each: a generous deadline past all of them
    const deadline = new Promise<'still running'>((resolve) => setTimeout(() => resolve('still running'), 90_000).unref());
    const outcome = await Promise.race([exited, deadline]);
    expect([outcome, stderr.slice(-2000)]).toEqual([{ code: 0, signal: null }, expect.any(String)]);
    const log = api.lines.join('\n');
    expect(log).toContain(`"signal":"${signal}"`);
    expect(log).toMatch(/shutdown: http did not stop within 15 s; going on without it/);
  } finally {
    follower?.destroy();
    if (api.child.exitCode === null && api.child.signalCode === null) {
      api.child.kill('SIGKILL');
      await exited;
    }
  }
});
