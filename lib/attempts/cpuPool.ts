/**
 * The task service's warm piscina pool for CPU-heavy work, so a big diff never blocks the event loop that serves
 * streams: parsing large diffs (GET …/diff) and building live diff events (parse, serialise, hash: diffEvent.ts).
 * One thread starts with the app and stays up (`warm`: loading the parsers, and tsx in development, takes longer
 * than the work it saves), a second one joins under load. Small inputs run inline: a thread hop (copying the text in and the result out) costs
 * more than parsing them. Log lines are not sent here: they are small and already serialised one by one as they
 * stream, and copying a batch to a thread costs as much as serialising it (docs/architecture.md).
 */
import path from 'node:path';
import { Piscina } from 'piscina';
import type { LogEntry } from '../db/processes';
import { diffEventBody, type DiffEventBody } from './diffEvent';
import { parseUnifiedDiff, type Diff } from './diffParse';

export const INLINE_LIMIT = 128 * 1024;

export interface CpuPool {
  parseDiff(text: string): Promise<Diff>;
  /** the shared body of a live diff event (parsed, serialised, hashed) */
  diffEvent(text: string): Promise<DiffEventBody>;
  normalizeLogs(format: string, lines: { stream: 'stdout' | 'stderr'; line: string }[]): Promise<LogEntry[]>;
  /** resolves once the pool's threads have started and loaded their code */
  ready(): Promise<void>;
  /** tasks run on pool threads so far (tests and metrics) */
  offloaded(): number;
  close(): Promise<void>;
}

export function createCpuPool(opts: { maxThreads?: number; inlineLimit?: number; warm?: boolean } = {}): CpuPool {
  const maxThreads = opts.maxThreads ?? 2;
  let pool: Piscina | undefined;
  let count = 0;
  const limit = opts.inlineLimit ?? INLINE_LIMIT;
  const get = () => {
    pool ??= new Piscina({
      filename: path.join(__dirname, '..', '..', 'workers', 'cpuTasks.js'),
      maxThreads,
      minThreads: opts.warm === false ? 0 : 1,
      idleTimeout: opts.warm === false ? 30_000 : Number.POSITIVE_INFINITY,
    });
    return pool;
  };
  const warming = opts.warm === false ? Promise.resolve() : get().run({ kind: 'ping' }).then(() => undefined);
  warming.catch(() => undefined);
  return {
    async parseDiff(text) {
      if (text.length < limit) return parseUnifiedDiff(text);
      count++;
      return (await get().run({ kind: 'diff', text })) as Diff;
    },
    async diffEvent(text) {
      if (text.length < limit) return diffEventBody(text);
      count++;
      return (await get().run({ kind: 'diffEvent', text })) as DiffEventBody;
    },
    async normalizeLogs(format, lines) {
      count++;
      return (await get().run({ kind: 'normalize', format, lines })) as LogEntry[];
    },
    ready: () => warming,
    offloaded: () => count,
    async close() {
      await warming.catch(() => undefined);
      await pool?.destroy();
      pool = undefined;
    },
  };
}
