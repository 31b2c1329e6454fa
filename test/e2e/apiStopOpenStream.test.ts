/**
 * `armada api` stops promptly and exits after SIGINT or SIGTERM:
 * - a client following a running process's log (SSE, NDJSON) sees its stream end when the stop begins
 *   (api/http/streamsEndOnStop.ts), so the HTTP step is not held for its 15 s limit (before: every stop with a board
 *   or a client following a log waited the full limit and logged "http did not stop within 15 s");
 * - a part that does not stop in time (here a client that sent half a request and nothing more) is left after its
 *   limit, and the process still exits 0 (before: it stayed alive on that handle after "going on without it").
 */
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import WebSocket from 'ws';
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

/** A client of `url` (a log follow) that reads and never closes; resolves once its answer has begun. */
function followForever(url: string): Promise<{ req: http.ClientRequest; res: http.IncomingMessage }> {
  return new Promise((resolve, reject) => {
    const req = http.get(url, (res) => {
      if (res.statusCode !== 200) return reject(new Error(`GET ${url}: ${res.statusCode}`));
      res.resume();
      resolve({ req, res });
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

/** A running process (as a worker records one) of a new task; its log follows never end on their own. */
async function runningProcess(base: string, name: string): Promise<string> {
  const projectId = await post(base, '/api/projects', { name, repository: { url: makeGitRepo() } });
  const taskId = await post(base, '/api/tasks', { projectId, title: 'a running agent' });
  const attemptId = `att-${name}`;
  const processId = `proc-${name}`;
  await insertAttempt(db.pool, { id: attemptId, taskId, llm: 'scripted', model: null, status: 'running', branchPrefix: 'armada', baseBranch: 'main', options: {}, description: '' });
  await insertProcess(db.pool, { id: processId, attemptId, taskId, llm: 'scripted', model: null, kind: 'initial', prompt: 'p' });
  return processId;
}

/** Resolves with how many ms after `since()` the answer ended (its end, or its connection's close). */
function endOf(res: http.IncomingMessage, since: () => number): Promise<number> {
  return new Promise((resolve) => {
    res.once('end', () => resolve(Date.now() - since()));
    res.once('close', () => resolve(Date.now() - since()));
  });
}

async function startApi(port: number) {
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
  return spawnArmada(['api', '--service', 'task'], 'listening', env, 120_000);
}

test.each(['SIGINT', 'SIGTERM'] as const)('%s with log streams open (SSE, NDJSON, WebSocket): they end when the stop begins, and the process exits 0 without waiting out the HTTP limit', async (signal) => {
  const port = await freePort();
  const api = await startApi(port);
  const exited = exitOf(api.child);
  const clients: http.ClientRequest[] = [];
  try {
    const base = `http://127.0.0.1:${port}`;
    const processId = await runningProcess(base, `stop-${signal}`);
    const sse = await followForever(`${base}/api/events/processes/${processId}/logs`);
    const ndjson = await followForever(`${base}/api/processes/${processId}/logs?follow=true`);
    clients.push(sse.req, ndjson.req);
    const ws = new WebSocket(`${base.replace('http', 'ws')}/ws/execution-processes/${processId}/logs/normalized`);
    await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
    const wsClosed = new Promise<number>((resolve) => ws.once('close', (code) => resolve(code)));
    let stoppedAt = 0;
    const ends = [endOf(sse.res, () => stoppedAt), endOf(ndjson.res, () => stoppedAt)];
    stoppedAt = Date.now();
    process.kill(api.child.pid as number, signal);
    const deadline = new Promise<'still running'>((resolve) => setTimeout(() => resolve('still running'), 90_000).unref());
    expect(await Promise.race([exited, deadline])).toEqual({ code: 0, signal: null });
    // both streams ended well before the HTTP step's 15 s limit (a generous bound: a loaded machine is slow, not 15 s slow)
    for (const ms of await Promise.all(ends)) expect(ms).toBeLessThan(10_000);
    // the NDJSON follow is cut short, not ended (its end would mean "finished, every line sent"); the socket says "going away"
    expect(ndjson.res.complete).toBe(false);
    expect(await wsClosed).toBe(1001);
    const log = api.lines.join('\n');
    expect(log).toContain(`"signal":"${signal}"`);
    expect(log).not.toMatch(/http did not stop within/);
  } finally {
    for (const c of clients) c.destroy();
    if (api.child.exitCode === null && api.child.signalCode === null) {
      api.child.kill('SIGKILL');
      await exited;
    }
  }
});

test('SIGINT with a client that sent half a request: the HTTP step is left after its limit, and the process still exits 0', async () => {
  const port = await freePort();
  const api = await startApi(port);
  const exited = exitOf(api.child);
  const half = net.connect(port, '127.0.0.1');
  half.on('error', () => undefined); // the server going away ends it
  try {
    await new Promise<void>((resolve) => half.once('connect', () => resolve()));
    half.write('GET /api/projects HTTP/1.1\r\nHost: localhost\r\n'); // and never the rest
    await new Promise((r) => setTimeout(r, 500));
    process.kill(api.child.pid as number, 'SIGINT');
    // the http step's limit is 15 s and the others' 5 s each: a generous deadline past all of them
    const deadline = new Promise<'still running'>((resolve) => setTimeout(() => resolve('still running'), 90_000).unref());
    expect(await Promise.race([exited, deadline])).toEqual({ code: 0, signal: null });
    expect(api.lines.join('\n')).toMatch(/shutdown: http did not stop within 15 s; going on without it/);
  } finally {
    half.destroy();
    if (api.child.exitCode === null && api.child.signalCode === null) {
      api.child.kill('SIGKILL');
      await exited;
    }
  }
});
