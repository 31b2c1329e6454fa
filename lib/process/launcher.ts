/**
 * Child processes (git commands, agents) started from one small helper process (workers/launcher.js) instead of
 * this one. Every spawn forks the calling process, and a fork copies its page tables: from a worker or API process of a
 * few hundred MB that costs about 5 ms of CPU and blocked event loop per spawn (more under load), against well
 * under 1 ms from the helper (docs/benchmarks.md, "Attempts"). The helper is started on first use, shared by all
 * callers of this process, restarted when it dies, and never keeps this process alive when nothing waits on it.
 * A request whose helper died fails (the caller's retry runs it again); a helper that cannot be started at all
 * falls back to spawning here. When this process dies without stopping the groups it had started (kill -9, out of
 * memory), the helper stops those whose leader still runs (SIGTERM, SIGKILL after their grace), so an agent does not
 * outlive its worker, and so are the commands still running (a `git clone`, with its own children), which would
 * otherwise race the retry of the activity that ran them.
 * A process group's stdout and stderr are not copied through the helper: it hands the pipes themselves to this
 * process (a handle sent over the IPC channel), which reads them as it would a child of its own (50 chatty agents
 * made ~10,000 IPC messages a second through the helper: docs/benchmarks.md, "Live logs", session 22).
 */
import { type ChildProcess, execFile, fork } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { Socket } from 'node:net';
import { PassThrough } from 'node:stream';
import { OWNER_VARIABLE, ownerMark } from './orphans';

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

/** A process group started by the launcher, as seen from here. */
export interface LaunchedGroup {
  pid: number;
  stdout: NodeJS.ReadableStream;
  stderr: NodeJS.ReadableStream;
  /** The leader's exit; spawnError when it could not be started. Rejects when the launcher died under it. */
  exit: Promise<{ code: number | null; signal: NodeJS.Signals | null; spawnError?: string }>;
}

export interface SpawnRequest {
  command: string;
  args: string[];
  cwd: string;
  env: NodeJS.ProcessEnv;
  stdin?: string;
  /** the group's nice value (lib/process/priority.ts) */
  nice?: number;
  /** between SIGTERM and SIGKILL when the launcher stops the group because this process went away (default 3 s) */
  graceMs?: number;
}

interface OpenGroup {
  pid: number;
  /** the leader runs (pid), or never started (0) */
  started(pid: number): void;
  streams: { stdout: PassThrough; stderr: PassThrough };
  /** the group's pipes handed over by the launcher (read here) */
  pipes: Socket[];
  exited(r: { code: number | null; signal: NodeJS.Signals | null; spawnError?: string }): void;
  ended(stream: 'stdout' | 'stderr'): void;
  lost(e: Error): void;
}

type GroupEvent =
  | { id: number; ev: 'spawned'; pid: number }
  | { id: number; ev: 'data'; stream: 'stdout' | 'stderr'; chunk: string }
  | { id: number; ev: 'end'; stream: 'stdout' | 'stderr' }
  | { id: number; ev: 'exit'; code: number | null; signal: NodeJS.Signals | null }
  | { id: number; ev: 'error'; message: string }
  | { id: number; ev: 'pipe'; stream: 'stdout' | 'stderr' };

/** The launcher sends the group events of one turn of its event loop as one message (workers/launcher.js). */
type GroupBatch = { id?: undefined; ev: 'batch'; events: GroupEvent[] };

const SCRIPT = path.join(__dirname, '..', '..', 'workers', 'launcher.js');

let child: ChildProcess | undefined;
let unavailable = false;
let nextId = 1;
const pending = new Map<number, Pending>();
const groups = new Map<number, OpenGroup>();

/** Requests in flight and groups running keep this process alive, like children it spawned itself would. */
function reference(c: ChildProcess): void {
  if (pending.size || groups.size) c.channel?.ref();
  else c.channel?.unref();
}

function onGroupEvent(m: GroupEvent, handle?: unknown): void {
  const g = groups.get(m.id);
  if (!g) {
    if (handle instanceof Socket) handle.destroy();
    return;
  }
  switch (m.ev) {
    case 'pipe': {
      // the group's own pipe, handed over by the launcher: read here, as a local spawn's would be
      if (!(handle instanceof Socket)) break;
      const out = g.streams[m.stream];
      g.pipes.push(handle);
      handle.on('data', (chunk: Buffer) => {
        if (!out.writableEnded) out.write(chunk);
      });
      let ended = false;
      const end = () => {
        if (ended) return;
        ended = true;
        if (!out.writableEnded) out.end();
        g.ended(m.stream);
      };
      handle.once('end', end);
      handle.once('close', end);
      handle.on('error', end); // e.g. a reset pipe: what was read is kept, the stream ends
      break;
    }
    case 'spawned':
      g.pid = m.pid;
      g.started(m.pid);
      break;
    case 'data':
      g.streams[m.stream].write(m.chunk);
      break;
    case 'end':
      g.streams[m.stream].end();
      g.ended(m.stream);
      break;
    case 'exit':
      g.exited({ code: m.code, signal: m.signal });
      break;
    case 'error':
      if (!g.pid) {
        // never started: no pid, no output, an exit that says why
        g.streams.stdout.end();
        g.streams.stderr.end();
        g.started(0);
        g.exited({ code: null, signal: null, spawnError: m.message });
      }
      break;
  }
}


/** Whether requests go through the helper (ARMADA_LAUNCHER=off spawns in this process, as before). */
function enabled(): boolean {
  return !unavailable && process.env.ARMADA_LAUNCHER !== 'off';
}

function start(): ChildProcess {
  // the helper needs no environment of its own: each request carries the child's (already filtered) environment
  const c = fork(SCRIPT, [], { env: { PATH: process.env.PATH ?? '/usr/bin:/bin' }, execArgv: [], stdio: ['ignore', 'ignore', 'inherit', 'ipc'], serialization: 'json' });
  c.on('message', (m: (RunResult & { id: number; ev?: undefined }) | GroupEvent | GroupBatch, handle?: unknown) => {
    if (m.ev === 'batch') {
      for (const e of m.events) onGroupEvent(e);
      return;
    }
    if (m.ev) return onGroupEvent(m, handle);
    const p = pending.get(m.id);
    if (!p) return;
    pending.delete(m.id);
    reference(c);
    p.resolve({ code: m.code, stdout: m.stdout, stderr: m.stderr });
  });
  c.on('error', () => undefined); // reported through 'exit'
  c.on('exit', () => {
    if (child === c) child = undefined;
    const lost = [...pending.values()];
    pending.clear();
    for (const p of lost) p.reject(new Error('the process launcher exited while a command ran; try again'));
    const orphans = [...groups.values()];
    groups.clear();
    for (const g of orphans) g.lost(new Error('the process launcher exited while the process ran'));
  });
  c.unref();
  c.channel?.unref();
  return c;
}

/** The running launcher, started on first use; undefined when it is off or cannot be used (spawn here instead). */
function launcher(): ChildProcess | undefined {
  if (!enabled()) return undefined;
  if (!child) {
    if (!fs.existsSync(SCRIPT)) {
      unavailable = true;
      return undefined;
    }
    child = start();
  }
  return child;
}

/** Runs `file args…` to completion and resolves with its exit code and output (never rejects for a failing command). */
export function runProcess(given: RunRequest): Promise<RunResult> {
  // its owner goes with it (and git's children), so a worker can stop it should this process die without the launcher
  // stopping it (ARMADA_LAUNCHER=off, or the launcher killed with it): lib/process/orphans.ts
  const req = { ...given, env: { ...given.env, [OWNER_VARIABLE]: ownerMark() } };
  const c = launcher();
  if (!c) return runHere(req);
  const id = nextId++;
  return new Promise<RunResult>((resolve, reject) => {
    pending.set(id, { resolve, reject });
    reference(c);
    c.send({ op: 'run', id, ...req }, (err) => {
      if (!err || !pending.delete(id)) return;
      reference(c);
      reject(err);
    });
  });
}

/**
 * Starts `command args…` in its own process group from the launcher. Resolves once it runs (or could not start:
 * pid 0 and an exit with spawnError); its output arrives on the streams. Stopping it is the caller's: signal the
 * group (`process.kill(-pid, …)`). Undefined when the launcher is off or cannot be used (start it here instead).
 */
export function spawnGroupInLauncher(req: SpawnRequest): Promise<LaunchedGroup> | undefined {
  const c = launcher();
  if (!c) return undefined;
  const id = nextId++;
  return new Promise<LaunchedGroup>((resolve, reject) => {
    let settled = false;
    const streams = { stdout: new PassThrough({ encoding: 'utf8' }), stderr: new PassThrough({ encoding: 'utf8' }) };
    let exited!: OpenGroup['exited'];
    let lostExit!: (e: Error) => void;
    const exit: LaunchedGroup['exit'] = new Promise((res, rej) => {
      exited = res;
      lostExit = rej;
    });
    exit.catch(() => undefined); // observed by the caller through LaunchedGroup.exit
    // forgotten once the leader exited and both streams ended (output can follow the exit: a grandchild may hold
    // the pipes open), or at once when it never started
    const open = new Set(['exit', 'stdout', 'stderr']);
    const finished = (part: string) => {
      open.delete(part);
      if (open.size) return;
      groups.delete(id);
      reference(c);
    };
    const g: OpenGroup = {
      pid: 0,
      streams,
      pipes: [],
      started(pid) {
        settled = true;
        resolve({ pid, stdout: streams.stdout, stderr: streams.stderr, exit });
      },
      exited(r) {
        exited(r);
        if (r.spawnError) open.clear();
        finished('exit');
      },
      ended: finished,
      lost(e) {
        if (g.pid) {
          try {
            process.kill(-g.pid, 'SIGKILL'); // its output has nowhere to go; the caller's retry starts it again
          } catch {
            /* gone */
          }
        }
        for (const p of g.pipes) p.destroy();
        streams.stdout.end();
        streams.stderr.end();
        lostExit(e);
        if (!settled) reject(e);
      },
    };
    groups.set(id, g);
    reference(c);
    // handOff: the launcher sends the group's stdout and stderr pipes here, so its output is read by this process
    // directly instead of copied chunk by chunk through the launcher and the IPC channel
    c.send({ op: 'spawn', id, command: req.command, args: req.args, cwd: req.cwd, env: req.env, stdin: req.stdin, nice: req.nice, graceMs: req.graceMs, handOff: true }, (err) => {
      if (!err || settled) return;
      groups.delete(id);
      reference(c);
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
