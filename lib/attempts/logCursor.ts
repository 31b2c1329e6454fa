/**
 * A log stream's resume cursor checked against the process's log. Seqs of a process are a prefix 1..n of what is
 * committed, and a client only sees a line once it is, so a cursor past the last stored line never came from this
 * history of the database: a backup restored, a database recreated, or a made-up number. Taken at its word it made
 * the stream skip every line numbered up to it as they were written later. It is not refused either (a browser
 * cannot read why an upgrade failed, and an EventSource retries the same Last-Event-ID for ever): the stream starts at
 * the real last line, and the stream says so before any line, as /ws/events does: a first message `stream.ready` with
 * `reset`, and where a message would be taken for a line (NDJSON; the raw log socket, unless its client asks for
 * notices) the `X-Log-Reset` header (api/task/attemptStreams.ts, api/task/processes.ts).
 */
import type { Queryable } from '../db/pool';
import { lastLogSeq } from '../db/processes';

export interface LogCursor {
  /** resume after this seq; undefined: from the first line */
  after: number | undefined;
  /** set when the cursor sent was past the last stored line: `seq` is that line's (0: none yet) */
  reset?: { seq: number; requestedAfter: number };
}

export async function checkLogCursor(db: Queryable, processId: string, requested: number | undefined): Promise<LogCursor> {
  if (requested === undefined || requested === 0) return { after: requested };
  const last = await lastLogSeq(db, processId);
  if (requested <= last) return { after: requested };
  return { after: last, reset: { seq: last, requestedAfter: requested } };
}
