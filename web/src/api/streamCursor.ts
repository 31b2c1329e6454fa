/**
 * Where a WebSocket stream resumes (the server's resume token of the last message, where the route sends one; else
 * the highest seq seen) and which messages it already had (de-duplication), and the server's reset of both: `/ws/events` and the log sockets answer a cursor past everything they store (a cursor
 * of another history of the database: a backup restored, a database recreated) with
 * `{type: 'stream.ready', seq, data: {reset: true, requestedAfter}}`; from then on the seqs seen before mean nothing.
 */

export interface StreamCursor {
  /** The resume point: the highest seq seen since the start or the last reset. */
  readonly last: number;
  /**
   * The server's resume token of the last message that carried one (`cursor` of /ws/events, which also holds a lower
   * seq that committed after a higher one), since the start or the last reset; resumes from it when set.
   */
  readonly token: string | undefined;
  /** Records the resume token a message carried. */
  note(token: string): void;
  /** Records `seq`; false when the message was had already (to be dropped). */
  accept(seq: number): boolean;
  /** The server reset the stream: resume after `seq`, and forget every seq seen and the token. */
  reset(seq: number): void;
}

/**
 * `monotonic` drops any seq at or below the highest seen (a log replayed from its start); `seen` drops only a seq
 * already seen (events, where a later seq may commit first; the last 10,000 are kept).
 */
export function createStreamCursor(dedupe: 'monotonic' | 'seen'): StreamCursor {
  let last = 0;
  let token: string | undefined;
  const seen = new Set<number>();
  return {
    get last() {
      return last;
    },
    get token() {
      return token;
    },
    note(t) {
      token = t;
    },
    accept(seq) {
      if (dedupe === 'seen') {
        if (seen.has(seq)) return false;
        seen.add(seq);
        if (seen.size > 10_000) seen.delete(seen.values().next().value as number);
      } else if (seq <= last) return false;
      last = Math.max(last, seq);
      return true;
    },
    reset(seq) {
      seen.clear();
      last = seq;
      token = undefined;
    },
  };
}

/** The seq a `stream.ready` message with `data.reset` tells the client to resume from; undefined for any other message. */
export function resetSeqOf(msg: unknown): number | undefined {
  if (typeof msg !== 'object' || msg === null) return undefined;
  const m = msg as { type?: unknown; seq?: unknown; data?: { reset?: unknown } | null };
  if (m.type !== 'stream.ready' || m.data?.reset !== true || typeof m.seq !== 'number') return undefined;
  return m.seq;
}
