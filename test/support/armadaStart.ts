/**
 * `armada start` as a user runs it, for e2e tests: a real process on fresh ports with its own ARMADA_HOME, embedded
 * PostgreSQL and Temporal dev server. It runs as the leader of its own process group, like a program started from a
 * terminal, so `ctrlC` signals the whole group the way a terminal's Ctrl-C does.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

import { ARMADA_BIN as BIN } from './armadaProcess';
import { processesUsing } from './processes';

const { freePort, whilePortTaken } = require('./ports') as { freePort(): Promise<number>; whilePortTaken<T>(start: (tries: number) => Promise<T>): Promise<T> };

export interface StartPorts {
  task: number;
  scheduler: number;
  schedulerAlt: number;
  agents: number;
  traces: number;
  pg: number;
  temporal: number;
}

export interface RunningArmada {
  child: ChildProcess;
  ports: StartPorts;
  /** stdout and stderr so far */
  output(): string;
  /** Resolves with the exit code (null when killed by a signal). */
  exited: Promise<number | null>;
}

/** Ports that were free a moment ago; another test file may take one before armada binds it (see startArmada). */
async function pickPorts(): Promise<StartPorts> {
  return {
    task: await freePort(),
    scheduler: await freePort(),
    schedulerAlt: await freePort(),
    agents: await freePort(),
    traces: await freePort(),
    pg: await freePort(),
    temporal: await freePort(),
  };
}

function envFor(home: string, ports: StartPorts, extra: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  return {
    ...process.env,
    ARMADA_HOME: home,
    ARMADA_CONFIG: '',
    DATABASE_URL: '',
    TEMPORAL_ADDRESS: '',
    ARMADA_API_KEY: '',
    ARMADA_TASK_API_KEY: '',
    ARMADA_LOG_LEVEL: 'warn',
    ARMADA_TASK_PORT: String(ports.task),
    ARMADA_SCHEDULER_PORT: String(ports.scheduler),
    ARMADA_SCHEDULER_ALT_PORT: String(ports.schedulerAlt),
    ARMADA_AGENTS_PORT: String(ports.agents),
    ARMADA_TRACES_PORT: String(ports.traces),
    ARMADA_PG_PORT: String(ports.pg),
    ARMADA_TEMPORAL_PORT: String(ports.temporal),
    ARMADA_TEMPORAL_UI_PORT: '',
    ARMADA_TEMPORAL_METRICS_PORT: '',
    ARMADA_WORKFLOW_BUNDLE: process.env.ARMADA_WORKFLOW_BUNDLE ?? '',
    ...extra,
  };
}

/**
 * `armada start` on ARMADA_HOME `home`, resolved once it prints its banner (its ready line); when a port picked for it was taken
 * meanwhile by another test file, again on fresh ports. `ports` reuses the ports of an earlier start.
 */
export function startArmada(home: string, extraEnv: NodeJS.ProcessEnv = {}, ports?: StartPorts): Promise<RunningArmada> {
  // the given ports on the first try only: a retry picks fresh ones
  return whilePortTaken(async (tries) => startOnce(home, (tries === 1 ? ports : undefined) ?? (await pickPorts()), extraEnv));
}

function startOnce(home: string, ports: StartPorts, extraEnv: NodeJS.ProcessEnv): Promise<RunningArmada> {
  const child = spawn(BIN, ['start'], { env: envFor(home, ports, extraEnv), stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let out = '';
  child.stdout?.on('data', (d) => (out += d.toString()));
  child.stderr?.on('data', (d) => (out += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return new Promise((resolve, reject) => {
    const timer = setInterval(() => {
      if (isUp(out)) {
        clearInterval(timer);
        resolve({ child, ports, output: () => out, exited });
      }
    }, 100);
    void exited.then((code) => {
      clearInterval(timer);
      reject(new Error(`armada start exited with ${code}: ${out}`));
    });
  });
}

/** Whether `armada start` printed its banner: the ready JSON line (stdout not a terminal) or "Press Ctrl-C" (a terminal). */
export function isUp(output: string): boolean {
  return output.includes('"event":"ready"') || output.includes('Press Ctrl-C');
}

/** The ready line of `armada start` whose stdout is not a terminal, parsed; undefined before it came. */
export function readyLine(output: string): Record<string, unknown> | undefined {
  const line = output.split('\n').find((l) => l.includes('"event":"ready"'));
  return line === undefined ? undefined : (JSON.parse(line) as Record<string, unknown>);
}

/** Ctrl-C in a terminal: SIGINT to armada's whole process group. Resolves with the exit code. */
export function ctrlC(armada: RunningArmada): Promise<number | null> {
  process.kill(-(armada.child.pid as number), 'SIGINT');
  return armada.exited;
}

/**
 * Ctrl-C for a clean-up hook: when armada has not exited within limitMs, its output's tail and the processes still
 * using its home are printed, everything of it is killed, and the hook fails naming that (instead of timing out).
 */
export async function ctrlCWithin(armada: RunningArmada, home: string, limitMs: number): Promise<void> {
  if (armada.child.exitCode !== null || armada.child.signalCode !== null) return;
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), limitMs)));
  const outcome = await Promise.race([ctrlC(armada), late]);
  clearTimeout(timer);
  if (outcome !== 'late') {
    // a part that needed its stop limit (lib/runtime/shutdownSteps.ts) is shown, though the stop ended
    const stuck = armada.output().split('\n').filter((l) => l.includes('did not stop within'));
    if (stuck.length) process.stdout.write(`armada stopped, after a part hit its stop limit:\n${stuck.join('\n')}\n`);
    return;
  }
  const left = processesUsing(home);
  process.stdout.write(`armada did not stop within ${limitMs} ms of Ctrl-C; processes using ${home}:\n${left.join('\n')}\nits output's tail:\n${armada.output().split('\n').slice(-40).join('\n')}\n`);
  for (const p of [-(armada.child.pid as number), ...left.map((l) => Number(l.split(':')[0]))]) {
    try {
      process.kill(p, 'SIGKILL');
    } catch {
      /* gone */
    }
  }
  throw new Error(`armada start did not stop within ${limitMs} ms of Ctrl-C (its output's tail is printed above)`);
}

/** The pid of the embedded postmaster (first line of its pid file) and of the Temporal dev server. */
export function serverPid(home: string, server: 'postgres' | 'temporal'): number {
  const file = server === 'postgres' ? path.join(home, 'pg', 'postmaster.pid') : path.join(home, 'temporal.db.pid');
  return Number(fs.readFileSync(file, 'utf8').split('\n')[0].trim());
}
