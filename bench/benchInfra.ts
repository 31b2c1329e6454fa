/** What the attempt benchmarks share: `armada infra` on free ports in a fresh home, and open-loop load with percentiles. */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import { loadConfig } from '../lib/config';

/**
 * A free port below the kernel's ephemeral range, as the tests pick theirs (test/support/ports.js): one from
 * listen(0) can be taken meanwhile as the local port of any outgoing connection of the machine.
 */
export const { freePort } = require('../test/support/ports') as { freePort(): Promise<number> };

/** A git repository at `dir` (created) with one commit on `main`: the project the attempt benchmarks work in. */
export function benchRepo(dir: string): string {
  fs.mkdirSync(dir, { recursive: true });
  const g = (...a: string[]) => execFileSync('git', ['-c', 'user.name=b', '-c', 'user.email=b@example.com', ...a], { cwd: dir, stdio: 'ignore' });
  g('init', '-q', '-b', 'main');
  fs.writeFileSync(path.join(dir, 'README.md'), '# bench\n');
  g('add', '-A');
  g('commit', '-qm', 'init');
  return dir;
}

/**
 * The Temporal CLI and other provisioned tools are taken from the user's tools dir (ARMADA_TOOLS_DIR, default
 * $ARMADA_HOME/tools of the environment the benchmark runs in), not from each run's fresh home: provisioned into the
 * fresh home, every run wrote a ~100 MB venv there, whose write-back 30 s later stalled PostgreSQL's commits in the
 * measured rounds (p99 of a one-row insert 70 ms instead of 3 ms on 2026-11-28's VM).
 */
export const sharedToolsDir = loadConfig(process.env).toolsDir;

/**
 * Flushes the machine's dirty pages (sync) and waits until write-back is done (Dirty + Writeback under 4 MiB, at most
 * 20 s), so a measured round does not share the disk with the write-back of what the run set up before it (git
 * repositories, worktrees, a fresh PostgreSQL cluster) or of a previous run's deletions: on these VMs (ext4 mounted
 * with discard) that write-back delayed single fsyncs by up to 0.5 s.
 */
export async function settleDisk(): Promise<void> {
  try {
    execFileSync('sync', { stdio: 'ignore' });
  } catch {
    return; // no sync(1): nothing to settle with
  }
  const deadline = Date.now() + 20_000;
  while (Date.now() < deadline) {
    const info = fs.readFileSync('/proc/meminfo', 'utf8');
    const kib = (k: string) => Number(new RegExp(`^${k}:\\s+(\\d+)`, 'm').exec(info)?.[1] ?? 0);
    if (kib('Dirty') + kib('Writeback') < 4096) return;
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** The node flags of bin/armada's first line (`#!/usr/bin/env -S node …`): what `npm start`, `bin/armada …` and the image run with. */
export function armadaNodeFlags(): string[] {
  const first = fs.readFileSync(path.join(__dirname, '..', 'bin', 'armada'), 'utf8').split('\n', 1)[0] ?? '';
  return (/^#!\S*env -S node(.*)$/.exec(first)?.[1] ?? '').split(/\s+/).filter(Boolean);
}

/**
 * Spawns `bin/armada <args>` (stdout JSON lines), node with the flags of its first line, and resolves with the line
 * whose event is `event`; `nodeArgs` go to
 * node (e.g. --cpu-prof). The child is stopped when this process exits.
 */
export function spawnArmada(args: string[], event: string, env: NodeJS.ProcessEnv, nodeArgs: string[] = []): Promise<{ child: ChildProcess; ready: Record<string, unknown> }> {
  const child = spawn(process.execPath, [...armadaNodeFlags(), ...nodeArgs, path.join(__dirname, '..', 'bin', 'armada'), ...args], {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, ARMADA_TOOLS_DIR: sharedToolsDir, ARMADA_LOG_LEVEL: 'warn', ARMADA_LOG_FORMAT: 'json', ...env },
  });
  const stop = () => child.kill('SIGTERM');
  process.once('exit', stop);
  return new Promise((resolve, reject) => {
    child.once('exit', (c) => reject(new Error(`armada ${args[0]} exited ${c}`)));
    readline.createInterface({ input: child.stdout as NodeJS.ReadableStream }).on('line', (l) => {
      try {
        const m = JSON.parse(l) as Record<string, unknown>;
        if (m.event === event) resolve({ child, ready: m });
      } catch {
        /* a log line */
      }
    });
  });
}

/**
 * Embedded PostgreSQL and a Temporal dev server (`armada infra`), plus the prebuilt workflow bundle. A benchmark that
 * fails (process.exit) takes them with it (spawnArmada): left running, they would load the machine under the next one.
 */
export async function startInfra(home: string): Promise<{ databaseUrl: string; temporalAddress: string; bundle: string; stop: () => Promise<void> }> {
  const bundle = path.join(home, 'bundle.js');
  const args = ['infra', '--home', home, '--pg-port', String(await freePort()), '--temporal-port', String(await freePort()), '--bundle', bundle, '--show-secrets'];
  const { child, ready } = await spawnArmada(args, 'ready', { DATABASE_URL: '', TEMPORAL_ADDRESS: '' });
  await settleDisk(); // the fresh cluster's and Temporal database's files
  // resolves once `armada infra` has stopped its servers and exited: a benchmark that exited right after the signal
  // left its embedded PostgreSQL running in about half the runs
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGTERM');
    await Promise.race([exited, new Promise((r) => setTimeout(r, 30_000).unref())]);
  };
  return { databaseUrl: ready.databaseUrl as string, temporalAddress: ready.temporalAddress as string, bundle, stop };
}

/** Open-loop load: call i starts at i / rate seconds whatever the earlier ones do; returns each call's latency (ms). */
export async function fixedRate(seconds: number, rate: number, call: (i: number) => Promise<void>): Promise<{ latencies: number[]; errors: number }> {
  const latencies: number[] = [];
  let errors = 0;
  const t0 = performance.now();
  const calls: Promise<void>[] = [];
  for (let i = 0; i < seconds * rate; i++) {
    const wait = t0 + (i * 1000) / rate - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    calls.push(
      (async () => {
        const s = performance.now();
        try {
          await call(i);
          latencies.push(performance.now() - s);
        } catch {
          errors++;
        }
      })(),
    );
  }
  await Promise.all(calls);
  return { latencies, errors };
}

export function percentiles(xs: number[]) {
  const s = [...xs].sort((a, b) => a - b);
  const at = (q: number) => Number((s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))] ?? 0).toFixed(1));
  return { requests: s.length, p50: at(0.5), p90: at(0.9), p99: at(0.99), max: at(1) };
}
