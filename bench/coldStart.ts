/**
 * Cold start to healthy, and idle RSS, of `armada api` (all services) and `armada worker`, run through tsx (the
 * TypeScript sources) and from the compiled output of `npm run build`, in one run:
 *
 *   node bin/armada-ts bench/coldStart.ts [--runs 3] [--idle 5] [--dist DIR]
 *
 * Starts `armada infra` (embedded PostgreSQL + Temporal dev server, free ports, temp home), builds into a temp dir
 * (or uses --dist DIR, a finished build), then for each variant starts the process --runs times, one at a time:
 * "healthy" is the first moment every /health it serves answers 200 (polled every 25 ms from the spawn); the RSS is
 * /proc/<pid>/status VmRSS of the armada process itself after --idle seconds of idling (neither starts children
 * while idle). Prints the median of each and the ratio dist / tsx.
 * The tsx worker is measured with the prebuilt workflow bundle (ARMADA_WORKFLOW_BUNDLE, as production ran before the
 * build) and once without it (bundling at start, as `npm start` from a clone does).
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { parseArgs } from 'node:util';
import { armadaNodeFlags } from './benchInfra';

const { freePort } = require('../test/support/ports') as { freePort(): Promise<number> };
const ROOT = path.join(__dirname, '..');
const { values } = parseArgs({ args: process.argv.slice(2), options: { runs: { type: 'string', default: '3' }, idle: { type: 'string', default: '5' }, dist: { type: 'string' } } });
const RUNS = Number(values.runs);
const IDLE_MS = Number(values.idle) * 1000;
const out = (line: string) => process.stdout.write(`${line}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function startInfra(home: string, pgPort: number, temporalPort: number): Promise<{ child: ChildProcess; databaseUrl: string; temporalAddress: string }> {
  const child = spawn(process.execPath, [path.join(ROOT, 'bin', 'armada'), 'infra', '--home', home, '--pg-port', String(pgPort), '--temporal-port', String(temporalPort), '--until-stdin-closes', '--show-secrets'], {
    env: { ...process.env, ARMADA_LOG_LEVEL: 'warn', ARMADA_RUNTIME: 'tsx' },
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`armada infra exited ${code}`)));
    readline.createInterface({ input: child.stdout as NodeJS.ReadableStream }).on('line', (line) => {
      if (!line.startsWith('{')) return;
      const msg = JSON.parse(line) as { event?: string; databaseUrl: string; temporalAddress: string };
      if (msg.event === 'ready') resolve({ child, databaseUrl: msg.databaseUrl, temporalAddress: msg.temporalAddress });
    });
  });
}

async function healthy(url: string): Promise<boolean> {
  try {
    return (await fetch(url, { signal: AbortSignal.timeout(2000) })).status === 200;
  } catch {
    return false;
  }
}

function rssMiB(pid: number): number {
  const kb = Number(/VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]);
  return kb / 1024;
}

interface Variant {
  name: string;
  bin: string;
  args: string[];
  env: NodeJS.ProcessEnv;
  health: string[];
}

/** One cold start: spawn, poll every /health until all answer 200, idle, read RSS, SIGTERM and wait for the exit. */
async function measure(v: Variant): Promise<{ ms: number; rss: number }> {
  const t0 = performance.now();
  // node with bin/armada's flags, as `npm start` and the image run it
  const child = spawn(process.execPath, [...armadaNodeFlags(), v.bin, ...v.args], { env: v.env, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr?.on('data', (d) => (stderr = (stderr + d.toString()).slice(-2000)));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  try {
    for (;;) {
      if (child.exitCode !== null) throw new Error(`${v.name} exited ${child.exitCode}: ${stderr}`);
      if ((await Promise.all(v.health.map(healthy))).every(Boolean)) break;
      if (performance.now() - t0 > 180_000) throw new Error(`${v.name} not healthy in 180 s: ${stderr}`);
      await sleep(25);
    }
    const ms = performance.now() - t0;
    await sleep(IDLE_MS);
    return { ms, rss: rssMiB(child.pid as number) };
  } finally {
    child.kill('SIGTERM');
    await Promise.race([exited, sleep(15_000)]);
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;

async function main(): Promise<void> {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-coldstart-'));
  let dist = values.dist ? path.resolve(values.dist) : '';
  if (!dist) {
    dist = path.join(home, 'dist');
    const t = performance.now();
    execFileSync(process.execPath, [path.join(ROOT, 'scripts', 'build.js'), '--out', dist], { stdio: 'ignore' });
    out(`build: npm run build into a temp dir in ${((performance.now() - t) / 1000).toFixed(1)} s`);
  }
  const infra = await startInfra(path.join(home, 'infra'), await freePort(), await freePort());
  try {
    const base: NodeJS.ProcessEnv = {
      ...process.env,
      NODE_OPTIONS: '',
      NODE_ENV: '',
      ARMADA_RUNTIME: '',
      ARMADA_HOME: path.join(home, 'run'),
      ARMADA_CONFIG: '',
      DATABASE_URL: infra.databaseUrl,
      TEMPORAL_ADDRESS: infra.temporalAddress,
      ARMADA_API_KEY: 'bench-api-key-0123456789',
      ARMADA_LOG_LEVEL: 'warn',
      ARMADA_TEMPORAL_METRICS_PORT: '',
      ARMADA_WORKFLOW_BUNDLE: '',
      ARMADA_TASK_QUEUE: `coldstart-${process.pid}`,
    };
    const ports = { task: await freePort(), scheduler: await freePort(), schedulerAlt: await freePort(), agents: await freePort(), traces: await freePort(), worker: await freePort() };
    const apiEnv = { ...base, ARMADA_TASK_PORT: String(ports.task), ARMADA_SCHEDULER_PORT: String(ports.scheduler), ARMADA_SCHEDULER_ALT_PORT: String(ports.schedulerAlt), ARMADA_AGENTS_PORT: String(ports.agents), ARMADA_TRACES_PORT: String(ports.traces) };
    const apiHealth = [ports.task, ports.scheduler, ports.schedulerAlt, ports.agents, ports.traces].map((p) => `http://127.0.0.1:${p}/health`);
    const workerArgs = ['worker', '--health-port', String(ports.worker), '--grace', '1'];
    const workerHealth = [`http://127.0.0.1:${ports.worker}/health`];
    const tsxBin = path.join(ROOT, 'bin', 'armada');
    const distBin = path.join(dist, 'bin', 'armada');
    const bundle = path.join(dist, 'workflow-bundle.js');
    const variants: Variant[] = [
      { name: 'api, tsx', bin: tsxBin, args: ['api'], env: { ...apiEnv, ARMADA_RUNTIME: 'tsx' }, health: apiHealth },
      { name: 'api, dist', bin: distBin, args: ['api'], env: apiEnv, health: apiHealth },
      { name: 'worker, tsx + prebuilt bundle', bin: tsxBin, args: workerArgs, env: { ...base, ARMADA_RUNTIME: 'tsx', ARMADA_WORKFLOW_BUNDLE: bundle }, health: workerHealth },
      { name: 'worker, dist', bin: distBin, args: workerArgs, env: base, health: workerHealth },
      { name: 'worker, tsx, bundling at start', bin: tsxBin, args: workerArgs, env: { ...base, ARMADA_RUNTIME: 'tsx' }, health: workerHealth },
    ];
    // one warm-up of each (disk cache), not counted
    for (const v of variants) await measure({ ...v });
    const results = new Map<string, { ms: number; rss: number }>();
    const samples = new Map<string, { ms: number[]; rss: number[] }>(variants.map((v) => [v.name, { ms: [], rss: [] }]));
    // interleaved, so a burst of load from elsewhere hits every variant alike
    for (let i = 0; i < RUNS; i++) {
      for (const v of variants) {
        const r = await measure(v);
        samples.get(v.name)?.ms.push(r.ms);
        samples.get(v.name)?.rss.push(r.rss);
      }
    }
    out(`runs: ${RUNS} per variant (median), idle ${IDLE_MS / 1000} s before RSS; load average ${os.loadavg().map((x) => x.toFixed(1)).join(' ')}`);
    out('| Process | cold start to healthy | idle RSS | samples (ms) |');
    out('|---|---|---|---|');
    for (const v of variants) {
      const s = samples.get(v.name) as { ms: number[]; rss: number[] };
      const r = { ms: median(s.ms), rss: median(s.rss) };
      results.set(v.name, r);
      out(`| ${v.name} | ${(r.ms / 1000).toFixed(2)} s | ${r.rss.toFixed(0)} MiB | ${s.ms.map((x) => x.toFixed(0)).join(', ')} |`);
    }
    const ratio = (a: string, b: string, k: 'ms' | 'rss') => ((results.get(a)?.[k] as number) / (results.get(b)?.[k] as number)).toFixed(2);
    out(`dist / tsx: api start ${ratio('api, dist', 'api, tsx', 'ms')}, RSS ${ratio('api, dist', 'api, tsx', 'rss')}; worker start ${ratio('worker, dist', 'worker, tsx + prebuilt bundle', 'ms')}, RSS ${ratio('worker, dist', 'worker, tsx + prebuilt bundle', 'rss')}`);
  } finally {
    infra.child.stdin?.end();
    await new Promise((r) => infra.child.once('exit', r));
    fs.rmSync(home, { recursive: true, force: true });
  }
}

main().catch((err) => {
  process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
