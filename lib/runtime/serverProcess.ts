/**
 * A server child (PostgreSQL, the Temporal dev server) in its own process group: Ctrl-C in a terminal signals
 * only armada, which then stops its servers in order (HTTP, worker, pools, then the servers), instead of every
 * process of the group at once.
 */
import { spawn, type SpawnOptions } from 'node:child_process';
import type { Logger } from '../logger';
import type { ChildServer } from './supervisor';

export interface ServerProcess extends ChildServer {
  /** The last few KB of stderr (startup failures quote it). */
  stderrTail(): string;
  /**
   * Resolves once stderr has been read to its end, or after `limitMs`: 'exit' can come before the last of the
   * output is read, so a failure quoted right at the exit missed its cause (a FATAL line), now and then.
   */
  stderrDrained(limitMs: number): Promise<void>;
  /** Registers a listener for each stderr chunk (readiness lines). */
  onStderr(fn: (text: string) => void): void;
  /** Sends `signal`, then SIGKILL after graceMs; resolves once the process has exited. */
  stop(signal: NodeJS.Signals, graceMs: number): Promise<void>;
}

export function spawnServer(bin: string, args: string[], log: Logger, options: Pick<SpawnOptions, 'env' | 'uid' | 'gid'> = {}): ServerProcess {
  const child = spawn(bin, args, { ...options, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  let tail = '';
  let status: string | null = null;
  const listeners: ((text: string) => void)[] = [];
  const stderrClosed = new Promise<void>((resolve) => {
    if (!child.stderr) resolve();
    child.stderr?.once('close', () => resolve());
    child.once('error', () => resolve());
  });
  const exited = new Promise<string>((resolve) => {
    child.on('exit', (code, signal) => {
      status = `exited (code ${code}, signal ${signal})`;
      resolve(status);
    });
    child.on('error', (err) => {
      status = `failed to start: ${err.message}`;
      resolve(status);
    });
  });
  child.stdout?.on('data', (d: Buffer) => log.debug(d.toString().trim()));
  child.stderr?.on('data', (d: Buffer) => {
    const text = d.toString();
    tail = (tail + text).slice(-8000);
    log.debug(text.trim());
    for (const fn of listeners) fn(text);
  });
  return {
    pid: child.pid ?? 0,
    exited,
    stderrTail: () => tail,
    async stderrDrained(limitMs) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([stderrClosed, new Promise<void>((r) => (timer = setTimeout(r, limitMs)))]);
      clearTimeout(timer);
    },
    onStderr: (fn) => listeners.push(fn),
    async stop(signal, graceMs) {
      if (status !== null) return;
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
      child.kill(signal);
      await exited;
      clearTimeout(timer);
    },
  };
}
