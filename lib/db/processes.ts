/** SQL for execution processes, their append-only log rows and their resource samples. */
import { insertProcessEventSql } from '../attempts/projections';
import { notifyInsertedEventsSql } from '../events/publish';
import type { Queryable } from './pool';
import { jsonParam } from './storableText';

export const PROCESS_STATUSES = ['running', 'completed', 'failed', 'cancelled', 'stopped'] as const;
export type ProcessStatus = (typeof PROCESS_STATUSES)[number];

export interface ProcessResources {
  cpuUsage: number;
  memoryUsage: number;
  diskIO: number;
  networkIO: number;
}

export interface ProcessProgress {
  stage: string;
  current: string;
  percentage: number;
  estimatedRemaining: number;
}

export interface ProcessRow {
  id: string;
  attempt_id: string;
  task_id: string;
  llm: string;
  model: string | null;
  kind: 'initial' | 'follow_up';
  prompt: string;
  status: ProcessStatus;
  pid: number | null;
  worker_identity: string | null;
  worker_host: string | null;
  exit_code: number | null;
  error: string | null;
  resources: ProcessResources;
  progress: ProcessProgress;
  input_tokens: string;
  output_tokens: string;
  estimated_cost: number;
  created_at: Date;
  started_at: Date;
  finished_at: Date | null;
  cancelled_at: Date | null;
  stopped_at: Date | null;
}

/**
 * The process row, `running`; or, when its attempt is already cancelled, `cancelled` as the attempt's cancel would
 * have ended it (runAgent then returns without starting the agent). The attempt's row is read FOR SHARE in the same
 * statement: an API cancel in progress (it holds the row FOR UPDATE) is waited for and its `cancelled` seen, and a
 * cancel that comes after it waits for this insert and then ends the row as running. Before, a cancel answered
 * between a follow-up's resume and this insert found no running process, the row was written `running` and the agent
 * was started (outside round seven; test/integration/cancelBeforeProcessRow.test.ts). A row that exists (a retry of
 * the run) is returned as it is. A missing attempt is still the foreign key's error.
 * A row written `cancelled` publishes its `process_stopped` (status `cancelled`, error `attempt cancelled`, duration
 * 0) in the same statement, as any other end of a process does, so a board following the events sees it; before
 * session 51 it published nothing and appeared only on a reload. A row that existed publishes nothing again.
 */
export async function insertProcess(
  db: Queryable,
  p: { id: string; attemptId: string; taskId: string; llm: string; model: string | null; kind: 'initial' | 'follow_up'; prompt: string },
): Promise<ProcessRow> {
  const { rows } = await db.query<ProcessRow & { inserted: boolean; notified: string }>(
    `WITH a AS (SELECT status = 'cancelled' AS cancelled FROM attempts WHERE id = $2 FOR SHARE),
          s AS (SELECT coalesce((SELECT cancelled FROM a), false) AS cancelled),
          p AS (
            INSERT INTO processes (id, attempt_id, task_id, llm, model, kind, prompt, status, error, finished_at, cancelled_at, progress)
            SELECT $1, $2, $3, $4, $5, $6, $7,
                   CASE WHEN s.cancelled THEN 'cancelled' ELSE 'running' END,
                   CASE WHEN s.cancelled THEN 'attempt cancelled' END,
                   CASE WHEN s.cancelled THEN now() END,
                   CASE WHEN s.cancelled THEN now() END,
                   jsonb_build_object('stage', CASE WHEN s.cancelled THEN 'cancelled' ELSE 'queued' END, 'current', '',
                                      'percentage', CASE WHEN s.cancelled THEN 100 ELSE 0 END, 'estimatedRemaining', 0)
              FROM s
            ON CONFLICT (id) DO UPDATE SET id = EXCLUDED.id RETURNING *, (xmax = 0) AS inserted),
          -- xmax 0: inserted now (the conflict's update sets it), so a retry's row publishes nothing again
          pc AS (SELECT * FROM p WHERE p.inserted AND p.status = 'cancelled'),
          ev AS (${insertProcessEventSql('pc', "'process_stopped'", "jsonb_build_object('error', pc.error, 'duration', 0::float8)")})
     SELECT p.*, ${notifyInsertedEventsSql('ev')} AS notified FROM p`,
    [p.id, p.attemptId, p.taskId, p.llm, p.model, p.kind, p.prompt],
  );
  const { inserted: _i, notified: _n, ...row } = rows[0] as ProcessRow & { inserted: boolean; notified: string };
  return row as ProcessRow;
}

export async function getProcess(db: Queryable, id: string): Promise<ProcessRow | undefined> {
  const { rows } = await db.query<ProcessRow>('SELECT * FROM processes WHERE id = $1', [id]);
  return rows[0];
}

export async function listProcesses(db: Queryable, f: { status?: string; llm?: string; attemptId?: string }, limit: number, offset: number) {
  const values: unknown[] = [];
  const clauses: string[] = [];
  const add = (col: string, v: unknown) => {
    values.push(v);
    clauses.push(`${col} = $${values.length}`);
  };
  if (f.status !== undefined) add('status', f.status);
  if (f.llm !== undefined) add('llm', f.llm);
  if (f.attemptId !== undefined) add('attempt_id', f.attemptId);
  const w = clauses.length ? `WHERE ${clauses.join(' AND ')}` : '';
  const [list, count] = await Promise.all([
    db.query<ProcessRow>(`SELECT * FROM processes ${w} ORDER BY created_at DESC, id DESC LIMIT $${values.length + 1} OFFSET $${values.length + 2}`, [...values, limit, offset]),
    db.query<{ n: string }>(`SELECT count(*) AS n FROM processes ${w}`, values),
  ]);
  return { rows: list.rows, total: Number(count.rows[0]?.n ?? 0) };
}

export async function processesOfAttempt(db: Queryable, attemptId: string): Promise<ProcessRow[]> {
  const { rows } = await db.query<ProcessRow>('SELECT * FROM processes WHERE attempt_id = $1 ORDER BY created_at, id', [attemptId]);
  return rows;
}

export async function setProcessLive(
  db: Queryable,
  id: string,
  v: { resources?: ProcessResources; progress?: Partial<ProcessProgress>; tokens?: { input: number; output: number; cost: number } },
): Promise<void> {
  await db.query(
    `UPDATE processes SET resources = COALESCE($2, resources), progress = progress || COALESCE($3, '{}'::jsonb),
            input_tokens = COALESCE($4, input_tokens), output_tokens = COALESCE($5, output_tokens), estimated_cost = COALESCE($6, estimated_cost)
      WHERE id = $1`,
    [id, v.resources ?? null, v.progress ?? null, v.tokens?.input ?? null, v.tokens?.output ?? null, v.tokens?.cost ?? null],
  );
}

/** running → a final status; undefined when the process had already left running (a stop/cancel won). */
export async function finishProcessRow(
  db: Queryable,
  id: string,
  status: 'completed' | 'failed' | 'cancelled' | 'stopped',
  f: { exitCode: number | null; error: string | null },
): Promise<ProcessRow | undefined> {
  const { rows } = await db.query<ProcessRow>(
    `UPDATE processes SET status = $2, exit_code = $3, error = $4, finished_at = now(),
            cancelled_at = CASE WHEN $2 = 'cancelled' THEN now() ELSE cancelled_at END,
            stopped_at = CASE WHEN $2 = 'stopped' THEN now() ELSE stopped_at END,
            progress = progress || jsonb_build_object('stage', $2::text, 'percentage', 100)
      WHERE id = $1 AND status = 'running' RETURNING *`,
    [id, status, f.exitCode, f.error],
  );
  return rows[0];
}

/**
 * Fills exit code / error of a process already moved by stop or cancel (the agent's real exit arrives later). With
 * `pid`, only while the row still names that agent (see recordProcessEnded); returns whether the row was the caller's.
 */
export async function setProcessExit(db: Queryable, id: string, exitCode: number | null, error: string | null, fence: { pid?: number } = {}): Promise<boolean> {
  const r = await db.query(
    'UPDATE processes SET exit_code = COALESCE(exit_code, $2), error = COALESCE(error, $3), finished_at = COALESCE(finished_at, now()) WHERE id = $1 AND ($4::int IS NULL OR pid = $4)',
    [id, exitCode, error, fence.pid ?? null],
  );
  return (r.rowCount ?? 0) > 0;
}

// ---- logs ----

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

export interface LogEntry {
  level: LogLevel;
  message: string;
  timestamp: string;
  source: string;
  raw?: string;
  metadata?: Record<string, unknown>;
}

export interface LogRow {
  process_id: string;
  seq: number;
  attempt_id: string;
  level: LogLevel;
  message: string;
  source: string;
  raw: string;
  metadata: Record<string, unknown>;
  ts: Date;
}

/** Appends entries after the process's last seq (one writer per process: the runAgent activity). */
export async function appendLogs(db: Queryable, processId: string, attemptId: string, entries: LogEntry[]): Promise<number> {
  if (entries.length === 0) return 0;
  const { rows } = await db.query<{ seq: number }>(`${APPEND_SQL} RETURNING seq`, appendParams([{ processId, attemptId, entries }]));
  return Math.max(0, ...rows.map((r) => r.seq));
}

/**
 * Appends the entries of several processes in one statement (the worker's log writer, lib/attempts/logSink.ts),
 * each after its process's last seq, in the given order. One writer per process at a time, as for appendLogs.
 */
export async function appendLogsOfProcesses(db: Queryable, batches: { processId: string; attemptId: string; entries: LogEntry[] }[]): Promise<void> {
  if (!batches.some((b) => b.entries.length)) return;
  await db.query({ name: 'process_logs_append', text: APPEND_SQL, values: appendParams(batches) });
}

/**
 * The rows go as one array per column (unnest), not as a JSON document (jsonb_to_recordset): PostgreSQL reads a
 * text array for a fraction of building and taking apart a jsonb value, ~16 against ~24-30 µs a row in total with
 * the indexes and the NOTIFY trigger (docs/benchmarks.md, "Live logs", session 22). A raw text equal to the message
 * and empty metadata are sent as NULL (the common case for agents' lines) and stored as before.
 */
const APPEND_SQL = `INSERT INTO process_logs (process_id, seq, attempt_id, level, message, source, raw, metadata, ts)
  SELECT w.id, w.seq + e.ord, w.attempt, e.level, e.message, e.source, COALESCE(e.raw, e.message), COALESCE(e.meta::jsonb, '{}'::jsonb), e.ts
    FROM unnest($1::int[], $2::int[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::timestamptz[]) AS e(b, ord, level, message, source, raw, meta, ts)
    JOIN (SELECT w.b, w.id, w.attempt, COALESCE((SELECT max(seq) FROM process_logs l WHERE l.process_id = w.id), 0) AS seq
            FROM unnest($9::text[], $10::text[]) WITH ORDINALITY AS w(id, attempt, b)) w ON w.b = e.b`;

function appendParams(batches: { processId: string; attemptId: string; entries: LogEntry[] }[]): unknown[] {
  const b: number[] = [];
  const ord: number[] = [];
  const level: string[] = [];
  const message: string[] = [];
  const source: string[] = [];
  const raw: (string | null)[] = [];
  const meta: (string | null)[] = [];
  const ts: string[] = [];
  batches.forEach((x, k) => {
    x.entries.forEach((e, i) => {
      b.push(k + 1);
      ord.push(i + 1);
      level.push(e.level);
      message.push(e.message);
      source.push(e.source);
      raw.push(e.raw === undefined || e.raw === e.message ? null : e.raw);
      meta.push(e.metadata && Object.keys(e.metadata).length ? jsonParam(e.metadata) : null);
      ts.push(e.timestamp);
    });
  });
  return [b, ord, level, message, source, raw, meta, ts, batches.map((x) => x.processId), batches.map((x) => x.attemptId)];
}

/**
 * Whether the process's last `entries.length` rows are these entries, in this order (message, source, time): an insert
 * whose answer was lost (PostgreSQL killed or cut off between its commit and the reply) did commit, and sending it
 * again would store each line twice, after the lines it preceded (lib/attempts/logSink.ts).
 */
export async function lastLogsAre(db: Queryable, processId: string, entries: LogEntry[]): Promise<boolean> {
  if (entries.length === 0) return false;
  const { rows } = await db.query<{ message: string; source: string; ts: Date }>(
    'SELECT message, source, ts FROM process_logs WHERE process_id = $1 ORDER BY seq DESC LIMIT $2',
    [processId, entries.length],
  );
  if (rows.length !== entries.length) return false;
  rows.reverse();
  return rows.every((r, i) => {
    const e = entries[i] as LogEntry;
    return r.message === e.message && r.source === e.source && r.ts.getTime() === Date.parse(e.timestamp);
  });
}

/** The seq of the process's last stored log line; 0 when it has none. */
export async function lastLogSeq(db: Queryable, processId: string): Promise<number> {
  const { rows } = await db.query<{ seq: number | null }>('SELECT max(seq) AS seq FROM process_logs WHERE process_id = $1', [processId]);
  return rows[0]?.seq ?? 0;
}

export interface LogQuery {
  processIds: string[];
  afterSeq?: number;
  /** only with one process id: the last n lines */
  tail?: number;
  since?: Date;
  levels?: LogLevel[];
  limit?: number;
}

export async function readLogs(db: Queryable, q: LogQuery): Promise<LogRow[]> {
  const values: unknown[] = [q.processIds];
  const clauses = ['process_id = ANY($1::text[])'];
  const add = (sql: (p: string) => string, v: unknown) => {
    values.push(v);
    clauses.push(sql(`$${values.length}`));
  };
  if (q.afterSeq !== undefined) add((p) => `seq > ${p}`, q.afterSeq);
  if (q.since) add((p) => `ts >= ${p}`, q.since);
  if (q.levels?.length) add((p) => `level = ANY(${p}::text[])`, q.levels);
  if (q.tail !== undefined) {
    values.push(q.tail);
    const { rows } = await db.query<LogRow>(`SELECT * FROM (SELECT * FROM process_logs WHERE ${clauses.join(' AND ')} ORDER BY seq DESC LIMIT $${values.length}) t ORDER BY seq`, values);
    return rows;
  }
  values.push(q.limit ?? 10_000);
  // one process: in seq order, the order its lines were printed in, which resumes by seq rely on (a time order put a
  // line whose time went back, a clock step or a retry's note, before lines it followed, and a resume after the last
  // seq read then skipped them); several: merged by time
  const order = q.processIds.length === 1 ? 'seq' : 'ts, process_id, seq';
  const { rows } = await db.query<LogRow>(`SELECT * FROM process_logs WHERE ${clauses.join(' AND ')} ORDER BY ${order} LIMIT $${values.length}`, values);
  return rows;
}

/** One process's rows after `afterSeq` in seq order, at most `limit`: a page of a read of every stored line. */
export async function readLogPage(db: Queryable, processId: string, afterSeq: number, filter: { since?: Date; levels?: LogLevel[] }, limit: number): Promise<LogRow[]> {
  const { rows } = await db.query<LogRow>(
    `SELECT * FROM process_logs WHERE process_id = $1 AND seq > $2
        AND ($3::timestamptz IS NULL OR ts >= $3) AND ($4::text[] IS NULL OR level = ANY($4::text[]))
      ORDER BY seq LIMIT $5`,
    [processId, afterSeq, filter.since ?? null, filter.levels?.length ? filter.levels : null, limit],
  );
  return rows;
}

/**
 * The rows after each process's seq (at most `limit` each), ordered by process and seq: the live log feed's one read
 * for every process with news (lib/events/logFeed.ts), which reads every stored line once per API process. Rows come
 * as arrays of the few columns it needs and are built here in one shape: node-postgres' generic row objects were the
 * API's largest cost while 50 attempts started (docs/benchmarks.md, session 35). `raw` and `metadata` equal to their
 * defaults (the message, `{}`) are sent as NULL, and `ts` as epoch milliseconds (what a Date holds).
 */
export async function readNewRows(db: Queryable, processIds: string[], afterSeqs: number[], limit: number): Promise<LogRow[]> {
  const { rows } = await db.query<NewRow>({ name: 'log_feed_new_rows', text: NEW_ROWS_SQL, values: [processIds, afterSeqs, limit], rowMode: 'array' });
  const out: LogRow[] = new Array(rows.length);
  for (let i = 0; i < rows.length; i++) {
    const r = rows[i] as NewRow;
    out[i] = compactLogRow(r[0], r[2], r[1], r[3], r[4], r[5], r[6], r[7], r[8]);
  }
  return out;
}

type NewRow = [string, number, string, LogLevel, string, string, string | null, Record<string, unknown> | null, number];

/**
 * A log row from its compact form, as readNewRows' statement and the log notification (migration 102) send it: `raw`
 * NULL when it equals the message, `metadata` NULL when empty, `ts` in epoch milliseconds.
 */
export function compactLogRow(
  processId: string,
  attemptId: string,
  seq: number,
  level: LogLevel,
  message: string,
  source: string,
  raw: string | null,
  metadata: Record<string, unknown> | null,
  tsMs: number,
): LogRow {
  return { process_id: processId, seq, attempt_id: attemptId, level, message, source, raw: raw ?? message, metadata: metadata ?? {}, ts: new Date(tsMs) };
}

const NEW_ROWS_SQL = `SELECT l.process_id, l.seq, l.attempt_id, l.level, l.message, l.source, NULLIF(l.raw, l.message), NULLIF(l.metadata, '{}'::jsonb),
    floor(extract(epoch FROM l.ts) * 1000)::float8
  FROM unnest($1::text[], $2::int[]) AS w(process_id, after)
  CROSS JOIN LATERAL (SELECT * FROM process_logs p WHERE p.process_id = w.process_id AND p.seq > w.after ORDER BY p.seq LIMIT $3) l
  ORDER BY l.process_id, l.seq`;

// ---- resource samples ----

export interface MetricSample {
  timestamp: string;
  cpu: number;
  memory: number;
  diskIO: number;
  networkIO: number;
}

export const MAX_SAMPLES_PER_PROCESS = 300;

/**
 * A running process's resource sample: its live `resources` and one row of its sample history (kept to the last
 * MAX_SAMPLES_PER_PROCESS), in one statement — a worker running hundreds of agents writes one per agent every 2 s.
 */
export async function recordResourceSample(db: Queryable, processId: string, resources: ProcessResources, s: MetricSample): Promise<void> {
  await db.query(
    `WITH live AS (UPDATE processes SET resources = $8 WHERE id = $1),
          ins AS (INSERT INTO process_metric_samples (process_id, ts, cpu, memory, disk_io, network_io) VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING)
     DELETE FROM process_metric_samples WHERE process_id = $1 AND ts < (
       SELECT ts FROM process_metric_samples WHERE process_id = $1 ORDER BY ts DESC OFFSET $7 LIMIT 1)`,
    [processId, s.timestamp, s.cpu, s.memory, s.diskIO, s.networkIO, MAX_SAMPLES_PER_PROCESS - 1, resources],
  );
}

export async function metricSamples(db: Queryable, processId: string): Promise<MetricSample[]> {
  const { rows } = await db.query<{ ts: Date; cpu: number; memory: number; disk_io: number; network_io: number }>(
    'SELECT * FROM process_metric_samples WHERE process_id = $1 ORDER BY ts',
    [processId],
  );
  return rows.map((r) => ({ timestamp: r.ts.toISOString(), cpu: r.cpu, memory: r.memory, diskIO: r.disk_io, networkIO: r.network_io }));
}

/**
 * The row stops naming `pid` as its agent (a retry is about to kill that lost agent and start another): the fence of
 * recordProcessEnded/setProcessExit then fails for the try that ran it, so that try cannot record the kill as the
 * run's end. Only while the row is running and still names that pid.
 */
export async function releaseProcessPid(db: Queryable, id: string, pid: number): Promise<void> {
  await db.query("UPDATE processes SET pid = NULL WHERE id = $1 AND pid = $2 AND status = 'running'", [id, pid]);
}
