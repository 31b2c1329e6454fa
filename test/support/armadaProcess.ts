/** Runs `bin/armada <args>` as its own process and resolves once it prints the JSON line whose `event` is `ready`. */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import readline from 'node:readline';

const { armadaBin } = require('./testBuild') as { armadaBin(): string };

/**
 * The bin/armada the tests start: in `npm test`, the compiled copy of the sources scripts/test.js made while it is
 * fresh, else (a source changed since, or `npx jest <file>`) the repository's, under tsx (test/support/testBuild.js).
 */
export const ARMADA_BIN = armadaBin();

export interface ArmadaProcess {
  child: ChildProcess;
  /** the ready line, parsed */
  ready: Record<string, unknown>;
  /** every stdout line so far */
  lines: string[];
}

export function spawnArmada(args: string[], ready: string, env: NodeJS.ProcessEnv, timeoutMs = 90_000, bin = ARMADA_BIN): Promise<ArmadaProcess> {
  const child = spawn(process.execPath, [bin, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  const lines: string[] = [];
  let stderr = '';
  child.stderr?.on('data', (d) => (stderr = (stderr + d.toString()).slice(-4000)));
  return new Promise((resolve, reject) => {
    // one that did not start in time is not left running after the test (it kept the jest worker from exiting)
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`armada ${args[0]} did not start in ${timeoutMs} ms: ${stderr}`));
    }, timeoutMs);
    const onExit = (code: number | null) => {
      clearTimeout(timer);
      reject(new Error(`armada ${args[0]} exited ${code}: ${stderr}`));
    };
    child.once('exit', onExit);
    readline.createInterface({ input: child.stdout as NodeJS.ReadableStream }).on('line', (line) => {
      lines.push(line);
      try {
        const msg = JSON.parse(line) as Record<string, unknown>;
        if (msg.event === ready) {
          clearTimeout(timer);
          child.removeListener('exit', onExit);
          resolve({ child, ready: msg, lines });
        }
      } catch {
        /* a log line */
      }
    });
  });
}

export interface StartedArmada {
  child: ChildProcess;
  /** stdout and stderr so far (one stream when tty) */
  output(): string;
  /** SIGINT to armada (Ctrl-C), resolves with its exit code */
  stop(): Promise<number | null>;
}

/** The pid of `pid`'s first child process (from /proc), or undefined. */
function firstChild(pid: number): number | undefined {
  try {
    const children = fs.readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean);
    return children.length ? Number(children[0]) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * `armada start` as a user runs it, resolved once it prints its banner: "Press Ctrl-C" on a terminal, the
 * `{"event":"ready",…}` line otherwise. With tty, it runs under util-linux's `script`, so its stdout is a terminal
 * (as in an interactive shell); Ctrl-C then goes to armada itself.
 */
export function startArmada(env: NodeJS.ProcessEnv, opts: { tty?: boolean; timeoutMs?: number } = {}): Promise<StartedArmada> {
  const child = opts.tty
    ? spawn('script', ['-qfec', `exec ${JSON.stringify(process.execPath)} ${JSON.stringify(ARMADA_BIN)} start`, '/dev/null'], { env, stdio: ['ignore', 'pipe', 'pipe'] })
    : spawn(process.execPath, [ARMADA_BIN, 'start'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout?.on('data', (d) => (out += d.toString()));
  child.stderr?.on('data', (d) => (out += d.toString()));
  const stop = () =>
    new Promise<number | null>((resolve) => {
      child.removeAllListeners('exit');
      if (child.exitCode !== null) return resolve(child.exitCode);
      child.once('exit', (code) => resolve(code));
      const target = opts.tty ? firstChild(child.pid as number) : child.pid;
      if (target) process.kill(target, 'SIGINT');
    });
  return new Promise((resolve, reject) => {
    const deadline = Date.now() + (opts.timeoutMs ?? 300_000);
    const timer = setInterval(() => {
      if (out.includes('Press Ctrl-C') || out.includes('"event":"ready"')) {
        clearInterval(timer);
        resolve({ child, output: () => out, stop });
      } else if (Date.now() > deadline) {
        clearInterval(timer);
        void stop();
        reject(new Error(`armada start did not come up: ${out.slice(-4000)}`));
      }
    }, 100);
    child.once('exit', (code) => {
      clearInterval(timer);
      reject(Object.assign(new Error(`armada start exited with ${code}: ${out.slice(-4000)}`), { output: out }));
    });
  });
}
