/**
 * Short-lived child processes (git) started from one small helper process (workers/launcher.js) instead of this
 * one. Every spawn forks the calling process, and a fork copies its page tables: from a worker or API process of a
 * few hundred MB that costs about 5 ms of CPU and blocked event loop per spawn (more under load), against well
 * under 1 ms from the helper (docs/benchmarks.md, "Attempts"). The helper is started on first use, shared by all
 * callers of this process, restarted when it dies, and never keeps this process alive when nothing waits on it.
 * A request whose helper died fails (the caller's retry runs it again); a helper that cannot be started at all
 * falls back to spawning here.
 */
import { type ChildProcess, execFile, fork } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

export interface RunRequest {
  file: string;
  args: string[];
  cwd: string;
  env: Record<string, string>;
  timeoutMs: number;
  maxBuffer: number;
  /** Written to stdin, which is then closed. */
  input?: string;
}

/** Like execFile's outcome: the exit code (1 when the process could not start or was killed), stdout and stderr. */
export interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

type Pending = { resolve(r: RunResult): void; reject(e: Error): void };

const SCRIPT = path.join(__dirname, '..', '..', 'workers', 'launcher.js');

let child: ChildProcess | undefined;
let unavailable = false;
let nextId = 1;
const pending = new Map<number, Pending>();

/** Whether requests go through the helper (ARMADA_LAUNCHER=off spawns in this process, as before). */
function enabled(): boolean {
  return !unavailable && process.env.ARMADA_LAUNCHER !== 'off';
}

function start(): ChildProcess {
  // the helper needs no environment of its own: each request carries the child's (already filtered) environment
  const c = fork(SCRIPT, [], { env: { PATH: process.env.PATH ?? '/usr/bin:/bin' }, execArgv: [], stdio: ['ignore', 'ignore', 'inherit', 'ipc'], serialization: 'json' });
  c.on('message', (m: RunResult & { id: number }) => {
    const p = pending.get(m.id);
    if (!p) return;
    pending.delete(m.id);
    if (!pending.size) c.channel?.unref();
    p.resolve({ code: m.code, stdout: m.stdout, stderr: m.stderr });
  });
  c.on('error', () => undefined); // reported through 'exit'
  c.on('exit', () => {
    if (child === c) child = undefined;
    const lost = [...pending.values()];
    pending.clear();
    for (const p of lost) p.reject(new Error('the process launcher exited while a command ran; try again'));
  });
  c.unref();
  c.channel?.unref();
  return c;
}

/** Runs `file args…` to completion and resolves with its exit code and output (never rejects for a failing command). */
export function runProcess(req: RunRequest): Promise<RunResult> {
  if (!enabled()) return runHere(req);
  if (!child) {
    if (!fs.existsSync(SCRIPT)) {
      unavailable = true;
      return runHere(req);
    }
    child = start();
  }
  const c = child;
  const id = nextId++;
  return new Promise<RunResult>((resolve, reject) => {
    pending.set(id, { resolve, reject });
    c.channel?.ref(); // a request in flight keeps this process alive, like a child it spawned itself would
    c.send({ op: 'run', id, ...req }, (err) => {
      if (!err || !pending.delete(id)) return;
      if (!pending.size) c.channel?.unref();
      reject(err);
    });
  });
}

/** Stops the helper (tests; a process that exits stops it anyway). */
export async function stopLauncher(): Promise<void> {
  const c = child;
  child = undefined;
  if (!c || c.exitCode !== null || c.signalCode !== null) return;
  await new Promise<void>((resolve) => {
    c.once('exit', () => resolve());
    c.kill('SIGTERM');
  });
}

/** The launcher's pid while it runs (tests). */
export function launcherPid(): number | undefined {
  return child?.pid;
}

function runHere(req: RunRequest): Promise<RunResult> {
  return new Promise((resolve) => {
    const c = execFile(req.file, req.args, { cwd: req.cwd, env: req.env, timeout: req.timeoutMs, maxBuffer: req.maxBuffer }, (err, stdout, stderr) => {
      const code = err ? (typeof (err as { code?: unknown }).code === 'number' ? (err as unknown as { code: number }).code : 1) : 0;
      resolve({ code, stdout: String(stdout), stderr: String(stderr) });
    });
    c.stdin?.on('error', () => undefined);
    if (req.input !== undefined) c.stdin?.end(req.input);
  });
}
