/**
 * The live state of a worker's running agents (progress, tokens) goes to their process rows in ONE update for all of
 * them, at most every MIN_GAP_MS, instead of one update per agent per tick: 50 chatty agents made ~250 single-row
 * updates (and commits) a second. Updates of one writer run one at a time; `settle` makes a run's last write exact
 * (what is pending for it is dropped, an update in flight is awaited, then the caller writes directly).
 * The `process_progress` events of the processes that asked for one (at most one a second each, runAgent) go in the
 * same statement, carrying the row as updated: before, each was a read of its row and a transaction of its own with a
 * NOTIFY, ~50 a second with 50 chatty agents, and PostgreSQL commits notifying transactions one at a time (the log
 * inserts' commits waited behind them: docs/benchmarks.md, "Session 55").
 */
import type { Queryable } from '../db/pool';
import type { ProcessProgress } from '../db/processes';
import { jsonParam } from '../db/storableText';
import { notifyInsertedEventsSql } from '../events/publish';

export const MIN_GAP_MS = 100;

export interface LiveValues {
  progress?: Partial<ProcessProgress>;
  tokens?: { input: number; output: number; cost: number };
}

interface Writer {
  pending: Map<string, LiveValues>;
  /** processes whose next update also publishes their process_progress event */
  events: Set<string>;
  round: Promise<void> | undefined;
  timer: NodeJS.Timeout | undefined;
  lastAt: number;
  /** resolved when the update carrying what is pending now has been written */
  next: { promise: Promise<void>; resolve: () => void } | undefined;
}

const writers = new WeakMap<Queryable, Writer>();

function writerFor(db: Queryable): Writer {
  let w = writers.get(db);
  if (!w) {
    w = { pending: new Map(), events: new Set(), round: undefined, timer: undefined, lastAt: 0, next: undefined };
    writers.set(db, w);
  }
  return w;
}

function deferred() {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

function schedule(db: Queryable, w: Writer): void {
  if (w.round || w.timer || (!w.pending.size && !w.next)) return;
  const wait = Math.max(0, w.lastAt + MIN_GAP_MS - Date.now());
  w.timer = setTimeout(() => {
    w.timer = undefined;
    void run(db, w);
  }, wait);
}

async function run(db: Queryable, w: Writer): Promise<void> {
  if (w.round) return;
  if (!w.pending.size) {
    // everything queued was settled by its runs meanwhile
    w.next?.resolve();
    w.next = undefined;
    return;
  }
  const batch = [...w.pending].map(([id, v]) => ({ id, progress: v.progress ?? null, i: v.tokens?.input ?? null, o: v.tokens?.output ?? null, c: v.tokens?.cost ?? null }));
  const events = batch.filter((b) => w.events.has(b.id)).map((b) => b.id);
  w.pending.clear();
  w.events.clear();
  const done = w.next;
  w.next = undefined;
  w.lastAt = Date.now();
  const update = `UPDATE processes p SET progress = p.progress || COALESCE(v.progress, '{}'::jsonb),
              input_tokens = COALESCE(v.i, p.input_tokens), output_tokens = COALESCE(v.o, p.output_tokens), estimated_cost = COALESCE(v.c, p.estimated_cost)
         FROM jsonb_to_recordset($1::jsonb) AS v(id text, progress jsonb, i bigint, o bigint, c double precision)
        WHERE p.id = v.id`;
  w.round = (
    events.length
      ? // the event as publishProcessEvent (lib/attempts/projections.ts) makes it, with the row as this update left it
        db.query(
          `WITH u AS (${update} RETURNING p.id, p.attempt_id, p.task_id, p.llm, p.status, p.exit_code, p.progress),
           ev AS (
             INSERT INTO events (type, topics, data)
             SELECT 'process_progress', ARRAY['process:' || u.id, 'attempt:' || u.attempt_id, 'task:' || u.task_id, 'processes'],
                    jsonb_build_object('processId', u.id, 'attemptId', u.attempt_id, 'taskId', u.task_id, 'llm', u.llm, 'status', u.status,
                                       'exitCode', u.exit_code, 'progress', u.progress)
               FROM u WHERE u.id = ANY($2::text[]) ORDER BY u.id
             RETURNING seq, type, topics, data, created_at)
           SELECT ${notifyInsertedEventsSql('ev')} AS notified`,
          [jsonParam(batch), events],
        )
      : db.query(update, [jsonParam(batch)])
  )
    .then(
      () => undefined,
      () => undefined, // live state is best effort: the next tick writes newer values, the run's end writes the last
    )
    .finally(() => {
      w.round = undefined;
      done?.resolve();
      schedule(db, w);
    });
  await w.round;
}

/**
 * Queues a process's live values (merged with what is queued for it); resolves once they are written (or the
 * update failed: live state is best effort). With `event`, the update also publishes the process's
 * `process_progress` event (its row as updated).
 */
export function queueLiveState(db: Queryable, processId: string, v: LiveValues, opts: { event?: boolean } = {}): Promise<void> {
  const w = writerFor(db);
  if (opts.event) w.events.add(processId);
  const prev = w.pending.get(processId);
  w.pending.set(processId, {
    progress: prev?.progress || v.progress ? { ...prev?.progress, ...v.progress } : undefined,
    tokens: v.tokens ?? prev?.tokens,
  });
  w.next ??= deferred();
  const p = w.next.promise;
  schedule(db, w);
  return p;
}

/** Before a run's last direct write: drops what is queued for the process and waits for an update in flight. */
export async function settleLiveState(db: Queryable, processId: string): Promise<LiveValues | undefined> {
  const w = writerFor(db);
  const pending = w.pending.get(processId);
  w.pending.delete(processId);
  w.events.delete(processId); // the run's end publishes its own
  if (w.round) await w.round;
  return pending;
}
