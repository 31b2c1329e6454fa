/**
 * Many attempts running at once on one worker (run: `node bin/armada-ts bench/concurrentAttempts.ts --concurrent 200`).
 * `armada infra`, then `armada worker` and `armada api --service task` as their own processes (so their RSS is
 * theirs), one project, N tasks and one attempt each. The agent is a slow shell script: it reads its prompt, prints a
 * line, then blocks on a shared lock (`flock -s`) that the bench holds, so all N agents are running at the same time
 * and all exit when the bench lets go of the lock. Prints:
 *  - the worker's RSS idle, with all N agents running (peak while sampled every second) and after they finished;
 *  - `GET /api/tasks?limit=20` latency at a fixed rate, before the attempts (idle) and while all N run;
 *  - the time to start N attempts, until all N agent processes run, and for all N attempts to be `completed` after
 *    their agents exit.
 * Options: --concurrent N (200), --worker-args "…" (extra `armada worker` arguments), --rate R (20 req/s),
 * --seconds S (10), --running-timeout S (1200: how long to wait for all N agents to run).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { Pool } from 'pg';
import { spawnArmada } from '../test/support/armadaProcess';
import { benchRepo, fixedRate, freePort, percentiles, startInfra } from './benchInfra';

const { values } = parseArgs({
  options: {
    concurrent: { type: 'string', default: '200' },
    'worker-args': { type: 'string', default: '' },
    rate: { type: 'string', default: '20' },
    seconds: { type: 'string', default: '10' },
    'running-timeout': { type: 'string', default: '1200' },
  },
});
const N = Number(values.concurrent);
const RATE = Number(values.rate);
const SECONDS = Number(values.seconds);

const rssMiB = (pid: number): number => {
  const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Math.round(Number(m?.[1] ?? 0) / 1024);
};

async function until(what: string, timeoutMs: number, check: () => Promise<boolean>): Promise<number> {
  const t0 = performance.now();
  for (;;) {
    if (await check()) return (performance.now() - t0) / 1000;
    if (performance.now() - t0 > timeoutMs) throw new Error(`${what}: not within ${timeoutMs / 1000} s`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

async function main() {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-bench-concurrent-'));
  const inf = await startInfra(home);
  const children: ChildProcess[] = [];
  const gate = path.join(home, 'agents.gate');
  fs.writeFileSync(gate, '');
  // the bench holds the lock in a process group of its own; killing the group lets every agent go at once
  const holder = spawn('flock', ['-x', gate, 'sleep', '100000'], { detached: true, stdio: 'ignore' });
  const configPath = path.join(home, 'config.json');
  const agent = 'cat >/dev/null; echo "waiting in $(basename "$PWD")"; flock -s "$ARMADA_BENCH_GATE" true; echo done';
  fs.writeFileSync(configPath, JSON.stringify({ agents: { slow: { command: ['sh', '-c', agent], format: 'text', env: { ARMADA_BENCH_GATE: gate } } } }));
  const port = await freePort();
  const env = {
    ...process.env,
    ARMADA_HOME: home,
    ARMADA_CONFIG: configPath,
    DATABASE_URL: inf.databaseUrl,
    TEMPORAL_ADDRESS: inf.temporalAddress,
    ARMADA_WORKFLOW_BUNDLE: inf.bundle,
    ARMADA_API_KEY: 'bench-api-key-0123456789',
    ARMADA_LOG_LEVEL: 'warn',
    ARMADA_TASK_PORT: String(port),
    ARMADA_TEMPORAL_METRICS_PORT: '',
  };
  const worker = await spawnArmada(['worker', '--health-port', '0', ...values['worker-args'].split(' ').filter(Boolean)], 'worker-started', env);
  children.push(worker.child);
  const api = await spawnArmada(['api', '--service', 'task'], 'listening', env);
  children.push(api.child);
  const base = `http://127.0.0.1:${port}`;
  const db = new Pool({ connectionString: inf.databaseUrl, max: 2 });
  const post = async (url: string, body: unknown) => {
    const r = await fetch(`${base}${url}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    const j = (await r.json()) as { data: Record<string, string> };
    if (r.status !== 200 && r.status !== 201) throw new Error(`${url}: ${r.status} ${JSON.stringify(j)}`);
    return j.data;
  };
  const list = () =>
    fixedRate(SECONDS, RATE, async () => {
      const r = await fetch(`${base}/api/tasks?limit=20`);
      await r.arrayBuffer();
      if (r.status !== 200) throw new Error(`status ${r.status}`);
    });
  try {
    const repo = benchRepo(path.join(home, 'repo'));
    const projectId = (await post('/api/projects', { name: 'bench', repository: { url: repo } })).id as string;
    const taskIds: string[] = [];
    for (let i = 0; i < N; i++) taskIds.push((await post('/api/tasks', { projectId, title: `concurrent ${i}` })).id as string);

    await list(); // warm-up
    const idleList = await list();
    const idleRss = rssMiB(worker.child.pid as number);

    const t0 = performance.now();
    let next = 0;
    await Promise.all(
      Array.from({ length: 10 }, async () => {
        while (next < taskIds.length) await post(`/api/tasks/${taskIds[next++]}/start`, { llm: 'slow' });
      }),
    );
    const startSeconds = (performance.now() - t0) / 1000;
    let runningNow = 0;
    // every attempt either has its agent running or has ended (an attempt that failed to start is counted below)
    const running = async () => {
      const { rows } = await db.query<{ r: string; ended: string }>(
        `SELECT (SELECT count(*) FROM processes WHERE status = 'running' AND pid > 0) AS r, (SELECT count(*) FROM attempts WHERE status <> 'running') AS ended`,
      );
      runningNow = Number(rows[0]?.r);
      return runningNow + Number(rows[0]?.ended) >= N;
    };
    const allRunningSeconds =
      startSeconds +
      (await until(`all ${N} agents running`, Number(values['running-timeout']) * 1000, running).catch((err: Error) => {
        throw new Error(`${err.message}: ${runningNow} running`);
      }));

    let peakRss = rssMiB(worker.child.pid as number);
    const sampler = setInterval(() => {
      peakRss = Math.max(peakRss, rssMiB(worker.child.pid as number));
    }, 1000);
    const busyList = await list();
    const runningRss = rssMiB(worker.child.pid as number);
    const agentsRunning = runningNow;

    process.kill(-(holder.pid as number), 'SIGKILL'); // the agents' lock is free: all N exit now
    const finishSeconds = await until(`all ${N} attempts completed`, 20 * 60_000, async () => {
      const { rows } = await db.query<{ n: string }>(`SELECT count(*) AS n FROM attempts WHERE status IN ('completed', 'failed')`);
      return Number(rows[0]?.n) >= N;
    });
    clearInterval(sampler);
    const { rows: outcome } = await db.query<{ status: string; n: string }>('SELECT status, count(*) AS n FROM attempts GROUP BY status');
    const afterRss = rssMiB(worker.child.pid as number);

    const out = {
      concurrent: N,
      agentsRunningAtOnce: agentsRunning,
      workerArgs: values['worker-args'],
      workerRssMiB: { idle: idleRss, allRunning: runningRss, peakWhileRunning: Math.max(peakRss, runningRss), afterAllFinished: afterRss },
      listTasksLimit20Ms: { rate: RATE, idle: { ...percentiles(idleList.latencies), errors: idleList.errors }, whileAllRun: { ...percentiles(busyList.latencies), errors: busyList.errors } },
      startAllSeconds: Number(startSeconds.toFixed(1)),
      untilAllAgentsRunningSeconds: Number(allRunningSeconds.toFixed(1)),
      allFinishedAfterAgentsExitSeconds: Number(finishSeconds.toFixed(1)),
      attempts: Object.fromEntries(outcome.map((r) => [r.status, Number(r.n)])),
      cpus: os.cpus().length,
      loadavg: os.loadavg().map((l) => Number(l.toFixed(2))),
    };
    process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
  } finally {
    try {
      process.kill(-(holder.pid as number), 'SIGKILL');
    } catch {
      /* already released */
    }
    for (const c of children) c.kill('SIGTERM');
    await Promise.all(children.map((c) => new Promise((r) => (c.exitCode === null && c.signalCode === null ? c.once('exit', r) : r(null)))));
    await db.end();
    await inf.stop(); // the embedded servers stop
    fs.rmSync(home, { recursive: true, force: true });
  }
  process.exit(0);
}

main().catch((err) => {
  process.stderr.write(`${err?.stack ?? err}\n`);
  process.exit(1);
});
