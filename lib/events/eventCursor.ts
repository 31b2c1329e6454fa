/**
 * A set of event seqs a follower of the events table has accounted for (received, or knows it need not receive): every
 * seq up to a watermark, plus sorted ranges above it. Seqs of concurrent transactions commit out of order (11 before
 * 10), so "the highest seq seen" is no cursor: a client that got 11 and resumes after 11 would never get 10. The
 * ranges above the watermark are what came before a lower seq that had not committed yet; the holes between them are
 * what the follower still waits for.
 *
 * As a resume token (`after=`, docs/attempts.md#streams): `<watermark>` or `<watermark>:<a>-<b>,<c>,…` (ranges and
 * single seqs above it, ascending). A plain number is the watermark alone: everything up to it, as before.
 */

/** Ranges a token carries at most; a cursor with more is written with fewer (claiming less: resends, never skips). */
export const TOKEN_MAX_RANGES = 64;
const NUM = '[0-9]{1,16}';
/** The token's syntax (the numbers' bound, Number.MAX_SAFE_INTEGER, is checked by parseEventCursor). */
export const EVENT_CURSOR_PATTERN = `^${NUM}(:${NUM}(-${NUM})?(,${NUM}(-${NUM})?){0,${TOKEN_MAX_RANGES - 1}})?$`;
export const EVENT_CURSOR_MAX_LENGTH = 17 + TOKEN_MAX_RANGES * 34;

export class EventCursor {
  private w: number;
  /** disjoint, ascending, not touching each other or the watermark: each [a, b] has a > w + 1 */
  private ranges: Array<[number, number]>;
  private text: string | undefined;

  private constructor(w: number, ranges: Array<[number, number]> = []) {
    this.w = w;
    this.ranges = ranges;
  }

  /** Every seq up to `seq`. */
  static upTo(seq: number): EventCursor {
    return new EventCursor(Math.max(0, seq));
  }

  /** Every seq up to the watermark is accounted for. */
  get watermark(): number {
    return this.w;
  }

  /** The highest seq accounted for. */
  max(): number {
    return this.ranges.at(-1)?.[1] ?? this.w;
  }

  /** Whether some seq between the watermark and max() is still missing. */
  hasGaps(): boolean {
    return this.ranges.length > 0;
  }

  /** The missing seqs between the watermark and max(), as ranges. */
  gaps(): Array<[number, number]> {
    const out: Array<[number, number]> = [];
    let prev = this.w;
    for (const [a, b] of this.ranges) {
      out.push([prev + 1, a - 1]);
      prev = b;
    }
    return out;
  }

  /** The ranges above the watermark (what the holes separate). */
  above(): ReadonlyArray<readonly [number, number]> {
    return this.ranges;
  }

  has(seq: number): boolean {
    if (seq <= this.w) return true;
    for (const [a, b] of this.ranges) {
      if (seq < a) return false;
      if (seq <= b) return true;
    }
    return false;
  }

  add(seq: number): this {
    return this.addRange(seq, seq);
  }

  addRange(from: number, to: number): this {
    if (to < from || to <= this.w) return this;
    this.text = undefined;
    let a = Math.max(from, this.w + 1);
    let b = to;
    const kept: Array<[number, number]> = [];
    let placed = false;
    for (const r of this.ranges) {
      if (r[1] + 1 < a) kept.push(r);
      else if (b + 1 < r[0]) {
        if (!placed) kept.push([a, b]);
        placed = true;
        kept.push(r);
      } else {
        a = Math.min(a, r[0]);
        b = Math.max(b, r[1]);
      }
    }
    if (!placed) kept.push([a, b]);
    this.ranges = kept;
    const first = this.ranges[0];
    if (first && first[0] === this.w + 1) {
      this.w = first[1];
      this.ranges.shift();
    }
    return this;
  }

  /** Adds every seq of `other` (up to `limit` when given). */
  addAll(other: EventCursor, limit = Number.POSITIVE_INFINITY): this {
    this.addRange(1, Math.min(other.w, limit));
    for (const [a, b] of other.ranges) {
      if (a > limit) break;
      this.addRange(a, Math.min(b, limit));
    }
    return this;
  }

  /** Whether every seq of this cursor is in `other`. */
  within(other: EventCursor): boolean {
    if (this.w > other.w) return false;
    return this.ranges.every(([a, b]) => b <= other.w || other.ranges.some(([c, d]) => c <= a && b <= d));
  }

  clone(): EventCursor {
    const c = new EventCursor(this.w, this.ranges.map(([a, b]) => [a, b]));
    c.text = this.text;
    return c;
  }

  /** The resume token; with more than TOKEN_MAX_RANGES ranges the highest are left out (a resume sends them again). */
  toString(): string {
    if (this.text === undefined) {
      const parts = this.ranges.slice(0, TOKEN_MAX_RANGES).map(([a, b]) => (a === b ? `${a}` : `${a}-${b}`));
      this.text = parts.length ? `${this.w}:${parts.join(',')}` : `${this.w}`;
    }
    return this.text;
  }
}

/** The union of cursors, as a token. */
export function formatUnion(a: EventCursor, b: EventCursor): string {
  if (b.within(a)) return a.toString();
  if (a.within(b)) return b.toString();
  return a.clone().addAll(b).toString();
}

/**
 * A resume token (the syntax of EVENT_CURSOR_PATTERN), ranges in any order; undefined when a number is past
 * Number.MAX_SAFE_INTEGER or a range ends before it starts.
 */
export function parseEventCursor(token: string): EventCursor | undefined {
  const [head, tail] = token.split(':', 2);
  const w = Number(head);
  if (!Number.isSafeInteger(w)) return undefined;
  const c = EventCursor.upTo(w);
  for (const part of tail ? tail.split(',') : []) {
    const [from, to = from] = part.split('-').map(Number) as [number, number?];
    if (!Number.isSafeInteger(from) || !Number.isSafeInteger(to) || to < from) return undefined;
    c.addRange(from, to);
  }
  return c;
}
