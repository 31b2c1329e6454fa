/**
 * Faults with a separate `armada worker` process: kill -9 it while an agent runs (the run is retried on a restarted
 * worker after the heartbeat timeout, the lost agent's group is killed) and restart the API while an attempt runs
 * (nothing lost; an SSE log stream resumes on the new API with Last-Event-ID without gaps).
 */
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { buildService } from '../../api/services';
import { groupAlive } from '../../lib/process/processGroup';
import { eventually, logger, startTestStack, type TestStack } from '../support/harness';
import { spawnStackWorker } from '../support/workerProcess';
import { agentConfig, api, gitOk, gitOut, recordHistory } from '../support/attemptHelpers';

let stack: TestStack;
let h: ReturnType<typeof api>;
const workers: ChildProcess[] = [];

async function startWorkerProcess(): Promise<ChildProcess> {
  const child = await spawnStackWorker(stack);
  workers.push(child);
  return child;
}

beforeAll(async () => {
  stack = await startTestStack({ services: ['task'], worker: false, file: agentConfig() });
  h = api(stack);
});
afterAll(async () => {
  for (const w of workers) if (w.exitCode === null && w.signalCode === null) w.kill('SIGKILL');
  await stack.close();
});

/**
 * A commit on the attempt's branch that changes the base the way git's checkout then writes it: the removal of
 * src/keep.txt first, then A-new.sh (new, executable), README.md, …, z-new.txt last (path order).
 */
function widenAttempt(worktree: string): void {
  fs.writeFileSync(path.join(worktree, 'A-new.sh'), '#!/bin/sh\necho new\n', { mode: 0o755 });
  fs.writeFileSync(path.join(worktree, 'README.md'), 'line 1\nline 2, merged\n');
  fs.rmSync(path.join(worktree, 'src', 'keep.txt'));
  fs.writeFileSync(path.join(worktree, 'z-new.txt'), 'last\n');
  gitOut(worktree, 'add', '-A');
  gitOut(worktree, '-c', 'user.name=t', '-c', 'user.email=t@example.com', 'commit', '-q', '-m', 'widen');
}

/**
 * Holds git's checkout in `repo` when it comes to write `file` (a smudge filter that sleeps; the files before it are
 * written, the index and HEAD not yet): `reached` then holds the filter's pid. Returns what takes the filter away.
 */
function holdCheckoutAt(repo: string, file: string, reached: string): () => void {
  const script = path.join(stack.config.home, `hold-${path.basename(reached)}.sh`);
  fs.writeFileSync(script, `#!/bin/sh\nif [ "$1" = '${file}' ]; then echo $$ > '${reached}'; exec sleep 30; fi\nexec cat\n`, { mode: 0o755 });
  const attributes = path.join(repo, '.git', 'info', 'attributes');
  fs.mkdirSync(path.dirname(attributes), { recursive: true });
  fs.writeFileSync(attributes, '* filter=hold\n');
  gitOut(repo, 'config', 'filter.hold.smudge', `${script} %f`);
  return () => {
    gitOut(repo, 'config', '--unset', 'filter.hold.smudge');
    fs.rmSync(attributes);
  };
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe('attempt faults', () => {
  test('kill -9 of the worker while the agent runs: the run restarts on a new worker and the attempt completes', async () => {
    const first = await startWorkerProcess();
    const p = await h.project();
    const taskId = await h.task(p.id, 'SLOWEDIT under a dying worker');
    const { attemptId, processId } = await h.start(taskId);
    const pid = await eventually(async () => (await h.inject('GET', `/api/processes/${processId}`)).json().data.pid as number | null, 30_000);
    first.kill('SIGKILL');
    await new Promise((r) => first.once('exit', r));
    expect((await h.attempt(attemptId)).status).toBe('running');
    await startWorkerProcess();
    const a = await h.until(attemptId, ['completed', 'failed'], 45_000);
    expect(a.status).toBe('completed');
    expect(groupAlive(pid)).toBe(false);
    const proc = (await h.inject('GET', `/api/processes/${processId}`)).json().data;
    expect(proc.status).toBe('completed');
    expect(proc.pid).not.toBe(pid);
    const logs = (await h.inject('GET', `/api/processes/${processId}/logs`)).body.split('\n').filter(Boolean).map((l) => JSON.parse(l));
    expect(logs.some((l) => l.level === 'warn' && /lost worker|restarted/.test(l.message))).toBe(true);
    expect(a.changes).toMatchObject({ filesCreated: 1, filesModified: 1 });
    await recordHistory(stack, `attempt:${attemptId}`, 'attempt-worker-killed');
  }, 90_000);

  test('API restart while an attempt runs: nothing lost, the SSE log stream resumes on the new API', async () => {
    if (!workers.some((w) => w.exitCode === null && w.signalCode === null)) await startWorkerProcess();
    const p = await h.project();
    const taskId = await h.task(p.id, 'SLOWEDIT across an API restart');
    const app1 = await buildService('task', { db: stack.db, config: stack.config, keys: stack.keys, temporal: stack.temporal, logger, metrics: stack.metrics });
    const base1 = await app1.listen({ port: 0, host: '127.0.0.1' });
    const started = await app1.inject({ method: 'POST', url: `/api/tasks/${taskId}/start`, payload: { llm: 'scripted' } });
    const { attemptId, processId } = started.json().data;

    // read the stream from API #1 until a couple of lines arrived, then drop it and restart the API
    const firstIds: number[] = [];
    await new Promise<void>((resolve, reject) => {
      const req = http.get(`${base1}/api/events/processes/${processId}/logs`, (res) => {
        res.setEncoding('utf8');
        res.on('data', (d: string) => {
          for (const m of d.matchAll(/^id: (\d+)$/gm)) firstIds.push(Number(m[1]));
          if (firstIds.length >= 2) {
            req.destroy();
            resolve();
          }
        });
      });
      req.on('error', (err) => (firstIds.length >= 2 ? resolve() : reject(err)));
    });
    await app1.close();

    const app2: FastifyInstance = await buildService('task', { db: stack.db, config: stack.config, keys: stack.keys, temporal: stack.temporal, logger, metrics: stack.metrics });
    const base2 = await app2.listen({ port: 0, host: '127.0.0.1' });
    try {
      const rest = await new Promise<{ ids: number[]; end: boolean }>((resolve, reject) => {
        http
          .get(`${base2}/api/events/processes/${processId}/logs`, { headers: { 'last-event-id': String(firstIds.at(-1)) } }, (res) => {
            let buf = '';
            res.setEncoding('utf8');
            res.on('data', (d) => (buf += d));
            res.on('end', () => resolve({ ids: [...buf.matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1])), end: buf.includes('event: end') }));
          })
          .on('error', reject);
      });
      const ids = [...firstIds, ...rest.ids];
      expect(rest.end).toBe(true);
      expect(ids).toEqual(ids.map((_, i) => i + 1)); // no gap, no duplicate
      // the process has ended; the attempt completes once its changes are committed and recorded
      await eventually(async () => (await app2.inject({ method: 'GET', url: `/api/attempts/${attemptId}` })).json().data.status === 'completed', 30_000);
      const all = (await app2.inject({ method: 'GET', url: `/api/processes/${processId}/logs` })).body.split('\n').filter(Boolean);
      expect(all.length).toBe(ids.length);
    } finally {
      await app2.close();
    }
  }, 90_000);

  test("kill -9 of the worker while a merge moves the checked-out base (work tree and index written, HEAD not yet): the retry on the next worker lands it, the checkout clean", async () => {
    if (!workers.some((w) => w.exitCode === null && w.signalCode === null)) await startWorkerProcess();
    const live = workers.filter((w) => w.exitCode === null && w.signalCode === null);
    const { repo, attemptId, branch } = await h.finishedAttempt('Merge under a dying worker');
    const before = gitOut(repo, 'rev-parse', 'main');
    const head = gitOut(repo, 'rev-parse', branch);
    // git's reference-transaction hook holds the merge where it has written the work tree and the index and is about
    // to move main (the real window is that short; a larger merge's is longer)
    const reached = path.join(stack.config.home, 'merge-hook-reached');
    const hook = path.join(repo, '.git', 'hooks', 'reference-transaction');
    fs.writeFileSync(hook, `#!/bin/sh\nif [ "$1" = prepared ] && grep -q -e refs/heads/main -e ' HEAD'; then touch '${reached}'; sleep 30; fi\nexit 0\n`);
    fs.chmodSync(hook, 0o755);
    const merging = h.inject('POST', `/api/attempts/${attemptId}/merge`, {});
    await eventually(async () => fs.existsSync(reached), 30_000, 20);
    for (const w of live) w.kill('SIGKILL');
    await Promise.all(live.map((w) => (w.exitCode === null && w.signalCode === null ? new Promise((r) => w.once('exit', r)) : undefined)));
    fs.rmSync(hook);
    // what the killed git left: the merge in the checkout, uncommitted, under the old HEAD
    expect([gitOut(repo, 'rev-parse', 'HEAD'), gitOut(repo, 'status', '--porcelain').length > 0]).toEqual([before, true]);
    await startWorkerProcess();
    const r = await merging;
    // before: 409 dirty_base "main has uncommitted changes", for this merge and every one after it
    expect([r.statusCode, r.json().data?.commitSha]).toEqual([200, head]);
    expect([gitOut(repo, 'rev-parse', 'main'), gitOut(repo, 'status', '--porcelain'), (await h.attempt(attemptId)).merged]).toEqual([head, '', true]);
  }, 90_000);

  test("kill -9 of the worker while a merge writes the checked-out base's files (index and HEAD not yet moved): the retry puts them back and lands it", async () => {
    if (!workers.some((w) => w.exitCode === null && w.signalCode === null)) await startWorkerProcess();
    const live = workers.filter((w) => w.exitCode === null && w.signalCode === null);
    const { repo, attemptId, branch, worktree } = await h.finishedAttempt('Merge killed mid-checkout');
    widenAttempt(worktree);
    const before = gitOut(repo, 'rev-parse', 'main');
    const head = gitOut(repo, 'rev-parse', branch);
    const reached = path.join(stack.config.home, 'checkout-held-1');
    const release = holdCheckoutAt(repo, 'z-new.txt', reached);
    const merging = h.inject('POST', `/api/attempts/${attemptId}/merge`, {});
    await eventually(async () => fs.existsSync(reached) && fs.readFileSync(reached, 'utf8').trim(), 30_000, 20);
    const held = Number(fs.readFileSync(reached, 'utf8'));
    for (const w of live) w.kill('SIGKILL');
    await Promise.all(live.map((w) => (w.exitCode === null && w.signalCode === null ? new Promise((r) => w.once('exit', r)) : undefined)));
    // the launcher stops the lost worker's git (SIGTERM: git removes its index.lock)
    await eventually(async () => !alive(held) && !fs.existsSync(path.join(repo, '.git', 'index.lock')), 30_000, 50);
    release();
    // what the killed git left: HEAD and the index at main, src/keep.txt removed, A-new.sh and README.md written, z-new.txt not
    expect([gitOut(repo, 'rev-parse', 'HEAD'), gitOut(repo, 'diff', '--cached', '--name-only'), gitOut(repo, 'status', '--porcelain', '--', 'src/keep.txt', 'README.md', 'A-new.sh')]).toEqual([
      before,
      '',
      'M README.md\n D src/keep.txt\n?? A-new.sh',
    ]);
    expect(fs.existsSync(path.join(repo, 'z-new.txt'))).toBe(false);
    await startWorkerProcess();
    const r = await merging;
    // before: 409 dirty_base "main has uncommitted changes", for this merge and every one after it
    expect([r.statusCode, r.json().data?.commitSha]).toEqual([200, head]);
    expect([gitOut(repo, 'rev-parse', 'main'), gitOut(repo, 'status', '--porcelain'), (await h.attempt(attemptId)).merged]).toEqual([head, '', true]);
    expect([fs.readFileSync(path.join(repo, 'z-new.txt'), 'utf8'), fs.statSync(path.join(repo, 'A-new.sh')).mode & 0o111, fs.existsSync(path.join(repo, 'src', 'keep.txt'))]).toEqual(['last\n', 0o111, false]);
  }, 90_000);

  test("kill -9 of git while a merge writes the checked-out base's files, a user's edit mixed in: dirty_base, nothing touched; undone, the merge (no-ff) lands", async () => {
    if (!workers.some((w) => w.exitCode === null && w.signalCode === null)) await startWorkerProcess();
    const { repo, attemptId, branch, worktree } = await h.finishedAttempt('Merge killed mid-checkout, edited');
    widenAttempt(worktree);
    const before = gitOut(repo, 'rev-parse', 'main');
    const head = gitOut(repo, 'rev-parse', branch);
    const reached = path.join(stack.config.home, 'checkout-held-2');
    const release = holdCheckoutAt(repo, 'z-new.txt', reached);
    const merging = h.inject('POST', `/api/attempts/${attemptId}/merge`, { strategy: 'no-ff' });
    await eventually(async () => fs.existsSync(reached) && fs.readFileSync(reached, 'utf8').trim(), 30_000, 20);
    // the user edits README.md, which git has just written, then git is killed
    const readme = path.join(repo, 'README.md');
    const merged = fs.readFileSync(readme, 'utf8');
    fs.appendFileSync(readme, 'my own line\n');
    const gits = fs.readdirSync('/proc').filter((p) => /^\d+$/.test(p)).filter((p) => {
      try {
        return fs.readFileSync(`/proc/${p}/cmdline`, 'utf8').startsWith('git\0merge\0--ff-only\0') && fs.readlinkSync(`/proc/${p}/cwd`) === fs.realpathSync(repo);
      } catch {
        return false;
      }
    });
    expect(gits).toHaveLength(1);
    for (const pid of [...gits.map(Number), Number(fs.readFileSync(reached, 'utf8'))]) process.kill(pid, 'SIGKILL');
    release();
    const r = await merging;
    expect([r.statusCode, r.json().error?.details?.reason]).toEqual([409, 'dirty_base']);
    expect(r.json().error.details.files).toEqual(expect.arrayContaining(['README.md']));
    // nothing touched: the user's line, the merge's files as the killed git left them, its index.lock
    expect([gitOut(repo, 'rev-parse', 'main'), fs.readFileSync(readme, 'utf8'), fs.existsSync(path.join(repo, 'A-new.sh')), (await h.attempt(attemptId)).merged]).toEqual([
      before,
      `${merged}my own line\n`,
      true,
      false,
    ]);
    expect(fs.existsSync(path.join(repo, '.git', 'index.lock'))).toBe(true);
    // the user takes their line back and removes the killed git's lock: the merge puts the rest back and lands
    fs.writeFileSync(readme, merged);
    fs.rmSync(path.join(repo, '.git', 'index.lock'));
    const again = await h.inject('POST', `/api/attempts/${attemptId}/merge`, { strategy: 'no-ff' });
    expect(again.statusCode).toBe(200);
    expect([gitOut(repo, 'rev-parse', 'main^1', 'main^2', 'main^{tree}'), gitOut(repo, 'status', '--porcelain'), (await h.attempt(attemptId)).merged]).toEqual([
      [before, head, gitOut(repo, 'rev-parse', `${head}^{tree}`)].join('\n'),
      '',
      true,
    ]);
  }, 90_000);

  test("kill -9 of the worker while a delete removes the attempt's branch: the removal is tried again on the next worker within seconds, not minutes", async () => {
    if (!workers.some((w) => w.exitCode === null && w.signalCode === null)) await startWorkerProcess();
    const live = workers.filter((w) => w.exitCode === null && w.signalCode === null);
    const { repo, attemptId, branch } = await h.finishedAttempt('Deleted under a dying worker');
    const reached = path.join(stack.config.home, 'delete-hook-reached');
    const hook = path.join(repo, '.git', 'hooks', 'reference-transaction');
    fs.writeFileSync(hook, `#!/bin/sh\nif [ "$1" = prepared ] && grep -q -e '${branch}'; then touch '${reached}'; sleep 30; fi\nexit 0\n`);
    fs.chmodSync(hook, 0o755);
    const deleting = h.inject('DELETE', `/api/attempts/${attemptId}`);
    await eventually(async () => fs.existsSync(reached), 30_000, 20);
    for (const w of live) w.kill('SIGKILL');
    await Promise.all(live.map((w) => (w.exitCode === null && w.signalCode === null ? new Promise((r) => w.once('exit', r)) : undefined)));
    const killedAt = Date.now();
    fs.rmSync(hook);
    await startWorkerProcess();
    expect((await deleting).statusCode).toBe(200);
    // before: the lost try was noticed only at the removal's 2-minute start-to-close timeout (no heartbeat timeout)
    await eventually(async () => !gitOk(repo, 'rev-parse', '--verify', '--quiet', `refs/heads/${branch}`), 60_000, 250);
    expect(Date.now() - killedAt).toBeLessThan(60_000);
    expect((await h.inject('GET', `/api/attempts/${attemptId}`)).statusCode).toBe(404);
  }, 120_000);
});
