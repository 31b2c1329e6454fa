/** Building blocks of the parsers: a log entry, the `text` parser, a JSON-lines wrapper. */
import type { LogEntry, LogLevel } from '../../../lib/db/processes';
import type { OutputParser, ParsedLine } from './types';

export function entry(level: LogLevel, message: string, source: string, now: Date, raw: string, metadata: Record<string, unknown> = {}): LogEntry {
  return { level, message, timestamp: now.toISOString(), source, raw, metadata };
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
  return obj && typeof obj === 'object' && !Array.isArray(obj) ? (obj as Record<string, unknown>) : undefined;
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

