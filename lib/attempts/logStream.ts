/**
 * Reading log rows for the HTTP/WS/SSE streams: a snapshot, then (follow) polling by per-process seq until the
 * owner is finished. Polling by seq works the same on every API replica and resumes exactly (Last-Event-ID).
 */
import type { Queryable } from '../db/pool';
import { readLogs, type LogLevel, type LogRow } from '../db/processes';

const ORDER: LogLevel[] = ['debug', 'info', 'warn', 'error'];

/** `level` as a minimum: info → info, warn, error. */
export function levelsFrom(min: LogLevel | undefined): LogLevel[] | undefined {
  if (!min) return undefined;
  return ORDER.slice(ORDER.indexOf(min));
}

export interface LogLine {
  seq: number;
  processId: string;
  attemptId: string;
  level: LogLevel;
  message: string;
  timestamp: string;
  source: string;
  metadata: Record<string, unknown>;
}

export function logLine(r: LogRow): LogLine {
  return { seq: r.seq, processId: r.process_id, attemptId: r.attempt_id, level: r.level, message: r.message, timestamp: r.ts.toISOString(), source: r.source, metadata: r.metadata };
}

export interface LogStreamOptions {
  /** the processes to read (re-evaluated on each poll: follow-ups add processes) */
  processes(): Promise<string[]>;
  /** true once no more lines can come */
  finished(): Promise<boolean>;
  follow: boolean;
  levels?: LogLevel[];
  since?: Date;
  /** only for one process: the last n lines first */
  tail?: number;
  /** resume: seqs already delivered per process */
  after?: Record<string, number>;
  signal?: AbortSignal;
  pollMs?: number;
}

export async function* streamLogRows(db: Queryable, o: LogStreamOptions): AsyncGenerator<LogRow[]> {
  const last: Record<string, number> = { ...(o.after ?? {}) };
  let first = true;
  for (;;) {
    if (o.signal?.aborted) return;
    const finishedBefore = o.follow ? await o.finished() : true;
    const ids = await o.processes();
    const batch: LogRow[] = [];
    for (const id of ids) {
      const rows = await readLogs(db, {
        processIds: [id],
        afterSeq: last[id],
        since: o.since,
        levels: o.levels,
        tail: first && o.tail !== undefined && last[id] === undefined ? o.tail : undefined,
      });
      const top = rows.at(-1);
      if (top) last[id] = top.seq;
      batch.push(...rows);
    }
    first = false;
    batch.sort((a, b) => a.ts.getTime() - b.ts.getTime() || a.seq - b.seq);
    if (batch.length) yield batch;
    if (finishedBefore && batch.length === 0) return;
    if (!o.follow) return;
    if (!batch.length) await new Promise((r) => setTimeout(r, o.pollMs ?? 250));
  }
}
