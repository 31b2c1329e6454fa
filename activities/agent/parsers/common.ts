/** Building blocks of the parsers: a log entry, the `text` parser, a JSON-lines wrapper. */
import type { LogEntry, LogLevel } from '../../../lib/db/processes';
import type { OutputParser, ParsedLine } from './types';
import { plainObject } from '../../../lib/untrustedJson';

export function entry(level: LogLevel, message: string, source: string, now: Date, raw: string, metadata: Record<string, unknown> = {}): LogEntry {
  // the parsers read agents' JSON, which may hold anything where a string belongs: the message is always text
  return { level, message: typeof message === 'string' ? message : text(message), timestamp: now.toISOString(), source, raw, metadata };
}

/*
 * Fields of an agent's JSON events, read without trusting their types: an agent (or a version of it Armada has not
 * seen) may put a number where text belongs, null where an object does, or a string where a count does.
 */

/** A field as text: a string as it is, nothing as '', a number or boolean as written, anything else as its JSON. */
export function text(v: unknown): string {
  if (typeof v === 'string') return v;
  if (v === undefined || v === null) return '';
  if (typeof v === 'object') {
    try {
      return JSON.stringify(v);
    } catch {
      return '';
    }
  }
  return String(v);
}


/** A token count: a whole number from 0 to 2^53 − 1 (what a bigint column and JSON both hold), else 0. */
export function count(v: unknown): number {
  return typeof v === 'number' && Number.isFinite(v) && v > 0 ? Math.min(Math.floor(v), Number.MAX_SAFE_INTEGER) : 0;
}

/** A sum of token counts, kept within count's range. */
export function addCounts(...vs: number[]): number {
  return Math.min(
    vs.reduce((a, b) => a + b, 0),
    Number.MAX_SAFE_INTEGER,
  );
}

/** A cost in USD: a finite number ≥ 0, else undefined (not reported). */
export function usd(v: unknown): number | undefined {
  return typeof v === 'number' && Number.isFinite(v) && v >= 0 ? v : undefined;
}

/** `text`: every line is a log entry; stderr lines are warnings unless they say they are errors. */
export function textParser(): OutputParser {
  return {
    line(stream, line, now = new Date()): ParsedLine {
      const level: LogLevel = stream === 'stdout' ? 'info' : /\b(error|fatal|panic)\b/i.test(line) ? 'error' : 'warn';
      return { entries: [entry(level, line, stream, now, line)] };
    },
  };
}

/** The JSON object on a line, or undefined when the line is not one (plain text, bad JSON, an array…). */
export function jsonObject(line: string): Record<string, unknown> | undefined {
  const trimmed = line.trim();
  if (!trimmed.startsWith('{')) return undefined;
  let obj: unknown;
  try {
    obj = JSON.parse(trimmed);
  } catch {
    return undefined;
  }
  return plainObject(obj);
}

/** A JSON-lines parser wrapper: non-JSON lines (and stderr) are kept as text entries. */
export function jsonLines(handle: (obj: Record<string, unknown>, raw: string, now: Date) => ParsedLine): OutputParser {
  const text = textParser();
  return {
    line(stream, line, now = new Date()) {
      const obj = stream === 'stdout' ? jsonObject(line) : undefined;
      return obj ? handle(obj, line, now) : text.line(stream, line, now);
    },
  };
}

