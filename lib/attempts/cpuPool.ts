/**
 * The piscina pool for CPU-heavy work of the task service (large diff parsing, bulk log normalisation), so a big
 * diff never blocks the event loop that serves streams. Small inputs are parsed inline: a thread hop costs more.
 */
import path from 'node:path';
import { Piscina } from 'piscina';
import type { LogEntry } from '../db/processes';
import { parseUnifiedDiff, type Diff } from './diffParse';

export const INLINE_LIMIT = 128 * 1024;

export interface CpuPool {
  parseDiff(text: string): Promise<Diff>;
  normalizeLogs(format: string, lines: { stream: 'stdout' | 'stderr'; line: string }[]): Promise<LogEntry[]>;
  /** tasks run on pool threads so far (tests and metrics) */
  offloaded(): number;
  close(): Promise<void>;
}

export function createCpuPool(opts: { maxThreads?: number; inlineLimit?: number } = {}): CpuPool {
  let pool: Piscina | undefined;
  let count = 0;
  const limit = opts.inlineLimit ?? INLINE_LIMIT;
  const get = () => {
    pool ??= new Piscina({ filename: path.join(__dirname, '..', '..', 'workers', 'cpuTasks.js'), maxThreads: opts.maxThreads ?? 2, minThreads: 0, idleTimeout: 30_000 });
    return pool;
  };
  return {
    async parseDiff(text) {
      if (text.length < limit) return parseUnifiedDiff(text);
      count++;
      return (await get().run({ kind: 'diff', text })) as Diff;
    },
    async normalizeLogs(format, lines) {
      count++;
      return (await get().run({ kind: 'normalize', format, lines })) as LogEntry[];
    },
    offloaded: () => count,
    async close() {
      await pool?.destroy();
      pool = undefined;
    },
  };
}
