/**
 * Faults injected into `armada start` (issue 15): kill -9 of the embedded PostgreSQL and of the Temporal dev server,
 * a Temporal outage longer than the SDK retries for, a restart budget spent, and Ctrl-C on an idle suite. The bounds
 * (2 s to notice, 30 s to recover, 5 s to stop) are correctness bounds, generous enough for a busy machine.
 */
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { makeGitRepo } from '../support/harness';
import { processesUsing } from '../support/processes';
import { ctrlC, ctrlCWithin, serverPid, startArmada, type RunningArmada } from '../support/armadaStart';

jest.setTimeout(300_000);

const homes: string[] = [];
const running: { armada: RunningArmada; home: string }[] = [];

function freshHome(agents?: Record<string, unknown>): { home: string; env: NodeJS.ProcessEnv } {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-faults-'));
  homes.push(home);
  if (!agents) return { home, env: {} };
  const configPath = path.join(home, 'config.json');
  fs.writeFileSync(configPath, JSON.stringify({ agents }));
  return { home, env: { ARMADA_CONFIG: configPath } };
}

async function start(home: string, env: NodeJS.ProcessEnv): Promise<RunningArmada> {
  const armada = await startArmada(home, env);
  running.push({ armada, home });
  return armada;
}

// The long Temporal outage waits 75 s and more on an armada start of its own: it runs from the file's start, while
// the other scenarios go on theirs (other homes, ports and processes), and its test, last, waits for it. One after
// the other they took 145 s in the CI run of session 34, ~85 s of it this scenario's.
let longOutage: Promise<void>;
beforeAll(() => {
  longOutage = longTemporalOutage();
  longOutage.catch(() => undefined); // its test reports it
});

afterAll(async () => {
  try {
    // armada's own stop is bounded (lib/runtime/shutdownSteps.ts, ~70 s at most): one that is not over in 120 s is a bug
    for (const r of running) await ctrlCWithin(r.armada, r.home, 120_000);
  } finally {
    for (const h of homes) fs.rmSync(h, { recursive: true, force: true });
  }
});

interface Answer {
  status: number;
  body: Record<string, unknown>;
  ms: number;
}

async function call(url: string, init: RequestInit = {}): Promise<Answer> {
  const t0 = Date.now();
  const r = await fetch(url, { ...init, headers: { 'content-type': 'application/json', ...init.headers }, signal: AbortSignal.timeout(15_000) });
  const text = await r.text();
  let body: Record<string, unknown> = {};
  try {
    body = JSON.parse(text) as Record<string, unknown>;
  } catch {
    body = { text };
  }
  return { status: r.status, body, ms: Date.now() - t0 };
}

const post = (url: string, payload: unknown) => call(url, { method: 'POST', body: JSON.stringify(payload) });

/** Polls `probe` every 100 ms until it returns true; resolves with the time it took, or throws after limitMs. */
async function until(what: string, limitMs: number, probe: () => Promise<boolean>): Promise<number> {
  const t0 = Date.now();
  for (;;) {
    try {
      if (await probe()) return Date.now() - t0;
    } catch {
      /* not yet */
    }
    if (Date.now() - t0 > limitMs) throw new Error(`${what}: not within ${limitMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('one armada start, faults injected one after the other', () => {
  let armada: RunningArmada;
  let home: string;
  let task: string;
  let projectId: string;

  beforeAll(async () => {
    const fresh = freshHome({ quick: { command: ['/bin/sh', '-c', 'cat >/dev/null; echo done > done.txt'] } });
    home = fresh.home;
    armada = await start(home, fresh.env);
    task = `http://127.0.0.1:${armada.ports.task}`;
    const p = await post(`${task}/api/projects`, { name: 'Faults', repository: { url: makeGitRepo() } });
    expect(p.status).toBe(201);
    projectId = (p.body.data as { id: string }).id;
  });

  test('kill -9 of the embedded PostgreSQL: /health 503 naming it within 2 s, writes served again within 30 s, nothing lost', async () => {
    const before = await post(`${task}/api/tasks`, { projectId, title: 'written before the crash' });
    expect(before.status).toBe(201);
    const pid = serverPid(home, 'postgres');
    process.kill(pid, 'SIGKILL');

    const noticed = await until('health 503', 2000, async () => {
      const h = await call(`${task}/health`);
      return h.status === 503 && (h.body.down as string[] | undefined)?.includes('postgres') === true;
    });
    expect(noticed).toBeLessThanOrEqual(2000);
    // a write meanwhile answers at once: 503 SERVICE_UNAVAILABLE while PostgreSQL is down (201 if it is already back)
    const during = await post(`${task}/api/tasks`, { projectId, title: 'written during the outage' });
    expect(during.ms).toBeLessThan(2000);
    expect([201, 503]).toContain(during.status);
    if (during.status === 503) expect((during.body.error as { code: string }).code).toBe('SERVICE_UNAVAILABLE');

    const recovered = await until('writes served again', 30_000, async () => (await post(`${task}/api/tasks`, { projectId, title: 'written after the restart' })).status === 201);
    expect(recovered).toBeLessThan(30_000);
    expect(serverPid(home, 'postgres')).not.toBe(pid); // restarted by armada, not by hand
    // once a write is served, /health agrees (the body is printed if not)
    expect(await call(`${task}/health`)).toMatchObject({ status: 200, body: { status: 'ok' } });
    // WAL replay kept what was committed before the crash
    const kept = await call(`${task}/api/tasks/${(before.body.data as { id: string }).id}`);
    expect(kept.status).toBe(200);
  });

  test('a frozen PostgreSQL (SIGSTOP: a hung host or a partition): once called down, writes answer 503 in milliseconds, not after 10 s; a write sent into the freeze is told the truth', async () => {
    const pid = serverPid(home, 'postgres');
    // the postmaster and its children (each backend is a session of its own, so not in its process group)
    const frozen = [pid, ...fs.readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number)];
    for (const p of frozen) process.kill(p, 'SIGSTOP'); // connections are taken, nothing answers
    let intoTheFreeze: Promise<Answer> | undefined;
    try {
      // sent before anything knows: its query reaches the frozen server, which may still run it
      intoTheFreeze = post(`${task}/api/tasks`, { projectId, title: 'sent into the freeze' });
      await until('health 503 naming postgres', 20_000, async () => {
        const h = await call(`${task}/health`);
        return h.status === 503 && (h.body.down as string[] | undefined)?.includes('postgres') === true;
      });
      const after = await post(`${task}/api/tasks`, { projectId, title: 'sent once known down' });
      expect(after.status).toBe(503);
      expect(after.body).toMatchObject({ success: false, error: { code: 'SERVICE_UNAVAILABLE' } });
      expect(after.ms).toBeLessThan(1000); // before: the pool's 10 s connect timeout, each time
    } finally {
      for (const p of frozen) process.kill(p, 'SIGCONT');
    }
    // the write sent into the freeze: 503 if it was still waiting for a connection (dropped, nothing sent), else
    // answered once the server runs again; either way its answer is true
    const answered = await intoTheFreeze;
    expect([201, 503]).toContain(answered.status);
    const recovered = await until('writes served again', 30_000, async () => (await post(`${task}/api/tasks`, { projectId, title: 'written after the freeze' })).status === 201);
    expect(recovered).toBeLessThan(30_000);
    expect(serverPid(home, 'postgres')).toBe(pid); // the same server: nothing restarted it
    expect(await call(`${task}/health`)).toMatchObject({ status: 200, body: { status: 'ok' } });
    const titles = ((await call(`${task}/api/tasks?projectId=${projectId}&limit=100`)).body.data as { title: string }[]).map((t) => t.title);
    expect(titles.filter((t) => t === 'sent into the freeze')).toHaveLength(answered.status === 201 ? 1 : 0);
    expect(titles).not.toContain('sent once known down');
  });

  test('kill -9 of the Temporal dev server: 503 within 2 s, a start meanwhile answers 503 and creates nothing; then starts run again', async () => {
    const t = await post(`${task}/api/tasks`, { projectId, title: 'started around the outage' });
    expect(t.status).toBe(201);
    const taskId = (t.body.data as { id: string }).id;
    const pid = serverPid(home, 'temporal');
    process.kill(pid, 'SIGKILL');

    const noticed = await until('health 503', 2000, async () => {
      const h = await call(`${task}/health`);
      return h.status === 503 && (h.body.down as string[] | undefined)?.includes('temporal') === true;
    });
    expect(noticed).toBeLessThanOrEqual(2000);

    const refused = await post(`${task}/api/tasks/${taskId}/start`, { llm: 'quick' });
    expect(refused.ms).toBeLessThan(2000);
    expect(refused.status).toBe(503);
    expect(refused.body).toMatchObject({ success: false, error: { code: 'SERVICE_UNAVAILABLE' } });
    // what needs only PostgreSQL keeps working
    const read = await call(`${task}/api/tasks/${taskId}`);
    expect(read.status).toBe(200);
    const attempts = await call(`${task}/api/tasks/${taskId}/attempts`);
    expect(attempts.status).toBe(200);
    expect(attempts.body.data).toEqual([]); // the refused start created nothing

    const back = await until('temporal back', 30_000, async () => (await call(`${task}/health`)).status === 200);
    expect(back).toBeLessThan(30_000);
    expect(serverPid(home, 'temporal')).not.toBe(pid);
    const started = await post(`${task}/api/tasks/${taskId}/start`, { llm: 'quick' });
    expect(started.status).toBe(200);
    const attemptId = (started.body.data as { attemptId: string }).attemptId;
    // the worker reconnected by itself: the attempt runs to the end
    await until('attempt completed', 90_000, async () => {
      const a = await call(`${task}/api/attempts/${attemptId}`);
      return (a.body.data as { status: string }).status === 'completed';
    });
    const listed = await call(`${task}/api/tasks/${taskId}/attempts`);
    expect((listed.body.data as unknown[]).length).toBe(1);
  });
});

test('the restart budget spent: armada exits non-zero with one line naming the dependency, and leaves nothing running', async () => {
  const { home } = freshHome();
  const armada = await start(home, { ARMADA_RESTART_MAX_FAILURES: '2', ARMADA_RESTART_WINDOW_SECONDS: '300' });
  const first = serverPid(home, 'postgres');
  process.kill(first, 'SIGKILL');
  await until('postgres restarted', 30_000, async () => {
    const pid = serverPid(home, 'postgres');
    return pid !== first && (await call(`http://127.0.0.1:${armada.ports.traces}/health`)).status === 200;
  });
  process.kill(serverPid(home, 'postgres'), 'SIGKILL');
  const code = await Promise.race([armada.exited, new Promise((r) => setTimeout(() => r('still running'), 30_000).unref())]);
  expect(code).toBe(1);
  const lines = armada.output().split('\n').filter((l) => l.startsWith('armada: '));
  expect(lines).toEqual([expect.stringMatching(/^armada: postgres failed 2 times within 300 s .*giving up$/)]);
  await until('nothing left running', 10_000, async () => processesUsing(home).length === 0);
  expect(pidAlive(first)).toBe(false);
});

test('Ctrl-C on an idle suite: exits 0 within 5 s, no warning or error lines, no process left that names ARMADA_HOME', async () => {
  const { home } = freshHome();
  const armada = await start(home, { ARMADA_LOG_LEVEL: 'info' });
  await new Promise((r) => setTimeout(r, 2000)); // settled: background schedule set-up done, pools idle
  const shown = armada.output().length;
  const t0 = Date.now();
  const code = await ctrlC(armada);
  const seconds = (Date.now() - t0) / 1000;
  expect(code).toBe(0);
  expect(seconds).toBeLessThan(5);
  const after = armada.output().slice(shown).split('\n').filter(Boolean);
  const noisy = after.filter((l) => {
    try {
      return (JSON.parse(l) as { level: number }).level >= 40;
    } catch {
      return l !== 'armada stopped';
    }
  });
  expect(noisy).toEqual([]);
  await new Promise((r) => setTimeout(r, 500));
  expect(processesUsing(home)).toEqual([]);
  process.stdout.write(`Ctrl-C stopped the idle suite in ${seconds.toFixed(1)} s\n`);
});

/** The long outage's scenario, run in the background (see `longOutage`); it throws what its test reports. */
async function longTemporalOutage(): Promise<void> {
  const fresh = freshHome({ quick: { command: ['/bin/sh', '-c', 'cat >/dev/null; echo done > done.txt'] } });
  const armada = await start(fresh.home, { ...fresh.env, ARMADA_RESTART_MAX_FAILURES: '100', ARMADA_LOG_LEVEL: 'info' });
  const phase = (name: string) => process.stdout.write(`long outage: ${name} at ${new Date().toISOString()}\n`);
  try {
    const task = `http://127.0.0.1:${armada.ports.task}`;
    const p = await post(`${task}/api/projects`, { name: 'Long outage', repository: { url: makeGitRepo() } });
    const t = await post(`${task}/api/tasks`, { projectId: (p.body.data as { id: string }).id, title: 'after a long outage' });
    const taskId = (t.body.data as { id: string }).id;
    // the dev server cannot come back while something else holds its port
    process.kill(serverPid(fresh.home, 'temporal'), 'SIGKILL');
    const squatter = net.createServer((socket) => socket.destroy()); // holds the port, serves nothing
    await until('port taken', 10_000, () => new Promise((resolve) => {
      squatter.once('error', () => resolve(false));
      squatter.listen(armada.ports.temporal, '127.0.0.1', () => resolve(true));
    }));
    phase('port taken');
    await new Promise((r) => setTimeout(r, 75_000));
    expect((await call(`${task}/health`)).body.down).toEqual(['temporal']);
    await new Promise<void>((r) => squatter.close(() => r()));
    phase('port released');
    // a dev server spawned while the port was taken does not exit: it is replaced after its 60 s readiness timeout
    await until('temporal back', 150_000, async () => (await call(`${task}/health`)).status === 200);
    phase('temporal back');
    const started = await post(`${task}/api/tasks/${taskId}/start`, { llm: 'quick' });
    expect(started.status).toBe(200);
    const attemptId = (started.body.data as { attemptId: string }).attemptId;
    await until('attempt completed', 120_000, async () => ((await call(`${task}/api/attempts/${attemptId}`)).body.data as { status: string }).status === 'completed');
    phase('attempt completed');
    expect(await ctrlC(armada)).toBe(0);
    // its servers too (a stop that waited for a restart still starting left both running, test/e2e/stopDuringRestart.test.ts)
    await new Promise((r) => setTimeout(r, 500));
    expect(processesUsing(fresh.home)).toEqual([]);
  } catch (err) {
    process.stdout.write(`armada output:\n${armada.output().split('\n').filter((l) => !l.includes('"level":30') || /worker|temporal|supervisor/.test(l)).slice(-60).join('\n')}\n`);
    throw err;
  }
}

test('a Temporal outage longer than the SDK retries for: once it is back, starts are accepted and run to the end', () => longOutage, 600_000);
