/**
 * An attempt whose diff is a few MB (a 2 MB one-line file, a 200,000-line file, a 20 MB one-line file, names with a
 * tab, a newline, a quote and an invalid UTF-8 byte, a symlink) shows every file whole on every diff endpoint, the
 * `file=` filter and the live diff stream, read in place; read through the attempt's host (an API replica on another
 * host, where a read carries at most 1.5 MB) the files that do not fit are listed omitted with their counts, none
 * dropped. Before, the 1.5 MB cut of host reads was applied to in-place reads too, and silently: an empty diff.
 */
import { execFileSync } from 'node:child_process';
import type { FastifyInstance } from 'fastify';
import { buildService } from '../../api/services';
import { MAX_REMOTE_DIFF_BYTES } from '../../lib/attempts/readWorktree';
import { createLogger } from '../../lib/logger';
import { createMetrics } from '../../lib/metrics';
import { agentConfig, api } from '../support/attemptHelpers';
import { logger, makeGitRepo, startTestStack, testConfig, type TestStack } from '../support/harness';

interface JsonFile {
  path: string;
  status: string;
  additions: number;
  deletions: number;
  omitted?: boolean;
  changes: { type: string; content: string }[];
}

const SETUP = [
  "head -c 2000000 /dev/zero | tr '\\0' a > big1.txt",
  "seq 1 200000 | sed 's/^/line/' > many.txt",
  "head -c 20000000 /dev/zero | tr '\\0' h > huge.txt",
  'echo z > zz.txt',
  `printf 'x\\n' > "$(printf 'tab\\there.txt')"`,
  `printf 'x\\n' > "$(printf 'new\\nline.txt')"`,
  `printf 'x\\n' > 'q"uote.txt'`,
  `printf 'x\\n' > "$(printf 'bad\\377byte.txt')"`,
  'ln -s big1.txt link-to-big',
].join('\n');

/** Every file of the attempt: the setup script's and the scripted agent's (README.md, src/added.txt). */
const ADDED: Record<string, number> = {
  'big1.txt': 1,
  'many.txt': 200_000,
  'huge.txt': 1,
  'zz.txt': 1,
  'tab\there.txt': 1,
  'new\nline.txt': 1,
  'q"uote.txt': 1,
  'bad\uFFFDbyte.txt': 1,
  'link-to-big': 1,
  'src/added.txt': 3,
  'README.md': 1,
};
const BIG = ['big1.txt', 'many.txt', 'huge.txt'];

let stack: TestStack;
let viaHost: FastifyInstance;
/** the in-place service's address, for the SSE stream */
let base: string;
const logLines: string[] = [];
const captureLogger = createLogger('warn', 'armada', { write: (line: string) => void logLines.push(line) });

beforeAll(async () => {
  stack = await startTestStack({ services: ['task'], worker: true, file: agentConfig(), logger: captureLogger });
  // a replica on "another host": every worktree read goes through hostReadWorkflow on the attempt's host
  viaHost = await buildService('task', { db: stack.db, config: testConfig(agentConfig({ attempts: { worktreeReads: 'host', hostReadTimeoutMs: 30_000 } }), { ARMADA_TASK_QUEUE: stack.config.temporal.taskQueue }), keys: stack.keys, temporal: stack.temporal, logger, metrics: createMetrics() });
  await viaHost.ready();
  base = await stack.app('task').listen({ port: 0, host: '127.0.0.1' });
});
afterAll(async () => {
  await viaHost.close();
  await stack.close();
});

test('a diff of a few MB shows every file whole (json, unified, split, file=, the SSE stream); through the host the files past 1.5 MB are listed omitted', async () => {
  const h = api(stack);
  const repo = makeGitRepo({ 'README.md': 'line 1\n' });
  const p = await h.inject('POST', '/api/projects', { name: 'p-bigline', repository: { url: repo }, setup_script: SETUP });
  expect(p.statusCode).toBe(201);
  const taskId = await h.task(p.json().data.id, 'Big files');
  const { attemptId } = await h.start(taskId);
  const done = await h.until(attemptId, ['completed', 'failed'], 90_000);
  expect(done.status).toBe('completed');
  expect(done.changes).toMatchObject({ filesChanged: Object.keys(ADDED).length });
  const { rows } = await stack.db.query<{ worktree_path: string; base_commit: string }>('SELECT worktree_path, base_commit FROM attempts WHERE id = $1', [attemptId]);
  const wt = rows[0] as { worktree_path: string; base_commit: string };
  const gitDiff = execFileSync('git', ['diff', '--no-color', '--no-ext-diff', '-M', wt.base_commit], { cwd: wt.worktree_path, encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 });
  expect(gitDiff.length).toBeGreaterThan(24_000_000);

  const get = async (app: FastifyInstance, q: string) => {
    const r = await app.inject({ method: 'GET', url: `/api/attempts/${attemptId}/diff${q}` });
    expect(r.statusCode).toBe(200);
    return r.json().data;
  };
  const byPath = (files: JsonFile[]) => Object.fromEntries(files.map((f) => [f.path, f]));

  // in place: every file whole
  const json = await get(stack.app('task'), '');
  const files = byPath(json.files);
  expect(Object.keys(files).sort()).toEqual(Object.keys(ADDED).sort());
  for (const [name, added] of Object.entries(ADDED)) expect(files[name]).toMatchObject({ additions: added, deletions: 0 });
  for (const f of json.files as JsonFile[]) expect(f.omitted).toBeUndefined();
  expect(files['big1.txt']?.changes).toEqual([{ type: 'add', lineNumber: 1, content: 'a'.repeat(2_000_000) }]);
  expect(files['huge.txt']?.changes[0]?.content.length).toBe(20_000_000);
  expect(files['many.txt']?.changes.at(-1)).toEqual({ type: 'add', lineNumber: 200_000, content: 'line200000' });
  expect(json.summary).toEqual({ filesChanged: Object.keys(ADDED).length, additions: Object.values(ADDED).reduce((s, n) => s + n, 0), deletions: 0 });

  const unified = await get(stack.app('task'), '?format=unified');
  expect(unified.diff.length).toBe(gitDiff.length);
  expect(unified.diff === gitDiff).toBe(true);
  expect(unified.summary).toEqual(json.summary);

  const split = await get(stack.app('task'), '?format=split');
  expect(split.files.map((f: { path: string }) => f.path).sort()).toEqual(Object.keys(ADDED).sort());
  expect(split.files.find((f: { path: string }) => f.path === 'many.txt').rows).toHaveLength(200_000);

  for (const name of ['many.txt', 'big1.txt', 'huge.txt', 'zz.txt', 'new\nline.txt', 'tab\there.txt']) {
    const one = await get(stack.app('task'), `?file=${encodeURIComponent(name)}`);
    expect(one.files.map((f: JsonFile) => f.path)).toEqual([name]);
    expect(one.files[0]).toMatchObject({ additions: ADDED[name] });
    expect(one.files[0].omitted).toBeUndefined();
  }

  // the live diff stream sends the same files, then ends (the attempt is finished)
  const sse = await (await fetch(`${base}/api/events/task-attempts/${attemptId}/diff`)).text();
  const event = sse.split('\n\n').find((b) => b.startsWith('event: diff') || b.includes('\nevent: diff'));
  const data = JSON.parse(event?.split('\n').find((l) => l.startsWith('data: '))?.slice(6) ?? 'null');
  expect(data.summary).toEqual(json.summary);
  expect(data.files).toEqual(json.files);
  expect(sse).toContain('event: end');

  // through the attempt's host: what fits in a host read whole, the rest omitted with its counts, nothing dropped
  const remote = await get(viaHost, '');
  const rfiles = byPath(remote.files);
  expect(Object.keys(rfiles).sort()).toEqual(Object.keys(ADDED).sort());
  expect(remote.summary).toEqual(json.summary);
  for (const name of BIG) expect(rfiles[name]).toMatchObject({ omitted: true, additions: ADDED[name], deletions: 0, changes: [] });
  for (const name of Object.keys(ADDED).filter((n) => !BIG.includes(n))) {
    expect(rfiles[name]?.omitted).toBeUndefined();
    expect(rfiles[name]).toEqual(files[name]);
  }
  const remoteUnified = await get(viaHost, '?format=unified');
  expect(Buffer.byteLength(remoteUnified.diff)).toBeLessThanOrEqual(MAX_REMOTE_DIFF_BYTES);
  expect(remoteUnified.diff).toMatch(/^Armada: changes not shown: 200000 lines added, 0 removed \(.*1\.5 MB.*\)$/m);
  const remoteOne = await get(viaHost, '?file=many.txt');
  expect(remoteOne.files).toEqual([expect.objectContaining({ path: 'many.txt', omitted: true, additions: 200_000 })]);
  expect((await get(viaHost, '?file=zz.txt')).files).toEqual([files['zz.txt']]);
}, 180_000);

test('a diff git cannot read is an error on the endpoint (in place and through the host) and on the live stream, and logged; never an empty diff', async () => {
  const h = api(stack);
  const p = await h.project();
  const { attemptId } = await h.start(await h.task(p.id, 'Edit the readme'));
  expect((await h.until(attemptId, ['completed', 'failed'], 60_000)).status).toBe('completed');
  await stack.db.query('UPDATE attempts SET base_commit = $2 WHERE id = $1', [attemptId, 'f'.repeat(40)]);
  for (const app of [stack.app('task'), viaHost]) {
    const r = await app.inject({ method: 'GET', url: `/api/attempts/${attemptId}/diff?format=unified` });
    expect(r.statusCode).toBe(500);
    expect(r.json()).toMatchObject({ success: false, error: { code: 'DIFF_READ_FAILED', message: expect.stringContaining("The attempt's diff could not be read: git diff failed: ") } });
  }
  expect(logLines.some((l) => l.includes('"level":50') && l.includes('DIFF_READ_FAILED') && l.includes('request failed'))).toBe(true);
  const sse = await (await fetch(`${base}/api/events/task-attempts/${attemptId}/diff`)).text();
  expect(sse).toMatch(/event: error\ndata: \{"attemptId":"[^"]+","code":"DIFF_READ_FAILED","message":"The attempt's diff could not be read: git/);
  expect(sse.indexOf('event: end')).toBeGreaterThan(sse.indexOf('event: error'));
  expect(sse).not.toContain('event: diff');
  expect(logLines.some((l) => l.includes('live diff read failed') && l.includes(attemptId))).toBe(true);
}, 120_000);
