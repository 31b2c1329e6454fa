/**
 * pino logging; keys, tokens and secrets are redacted wherever they appear in a logged object, and so are the
 * credentials of URLs in messages, top-level string fields and errors (lib/urlCredentials.ts). Lines are JSON, or
 * human-readable (`HH:MM:SS.mmm LEVEL [component] message key=value`) with format `pretty`: the default on a TTY.
 */
import pino, { type Logger } from 'pino';
import { redactUrlCredentials } from './urlCredentials';

export const REDACT_PATHS = [
  'req.headers.authorization',
  'req.headers["x-api-key"]',
  'req.headers.cookie',
  'headers.authorization',
  'headers["x-api-key"]',
  '*.api_key',
  '*.apiKey',
  '*.token',
  '*.access_token',
  '*.accessToken',
  '*.secret',
  '*.password',
  '*.databaseUrl',
  'api_key',
  'apiKey',
  'token',
  'access_token',
  'secret',
  'password',
];

export type LogFormat = 'pretty' | 'json';

/** ARMADA_LOG_FORMAT when set, else pretty on a TTY and JSON otherwise (pipes, files, log collectors). */
export function resolveLogFormat(configured: LogFormat | undefined, isTTY: boolean): LogFormat {
  return configured ?? (isTTY ? 'pretty' : 'json');
}

const LEVEL_NAMES: Record<number, string> = { 10: 'TRACE', 20: 'DEBUG', 30: 'INFO', 40: 'WARN', 50: 'ERROR', 60: 'FATAL' };
const OMITTED = new Set(['level', 'time', 'pid', 'hostname', 'name', 'msg', 'component', 'service', 'err']);

function pad2(n: number, width = 2): string {
  return String(n).padStart(width, '0');
}

/** One pino JSON line as one human line (plus an error's stack, indented). Unparseable input passes through. */
export function formatPrettyLine(jsonLine: string): string {
  let entry: Record<string, unknown>;
  try {
    entry = JSON.parse(jsonLine) as Record<string, unknown>;
  } catch {
    return jsonLine.endsWith('\n') ? jsonLine : `${jsonLine}\n`;
  }
  const t = new Date(typeof entry.time === 'number' ? entry.time : Date.now());
  const time = `${pad2(t.getHours())}:${pad2(t.getMinutes())}:${pad2(t.getSeconds())}.${pad2(t.getMilliseconds(), 3)}`;
  const level = (LEVEL_NAMES[entry.level as number] ?? String(entry.level)).padEnd(5);
  const component = String(entry.component ?? entry.service ?? entry.name ?? 'armada');
  const extras = Object.entries(entry)
    .filter(([k]) => !OMITTED.has(k))
    .map(([k, v]) => `${k}=${typeof v === 'string' && !/\s/.test(v) ? v : JSON.stringify(v)}`);
  let line = `${time} ${level} [${component}] ${String(entry.msg ?? '')}${extras.length ? ` ${extras.join(' ')}` : ''}`;
  const err = entry.err as { type?: string; message?: string; stack?: string } | undefined;
  if (err) {
    line += ` err=${JSON.stringify(`${err.type ?? 'Error'}: ${err.message ?? ''}`)}`;
    if (err.stack) line += `\n${err.stack.split('\n').slice(1).map((l) => `    ${l.trim()}`).join('\n')}`;
  }
  return `${line}\n`;
}

/** A pino destination writing human lines to `out` (stdout by default). */
export function prettyDestination(out: { write(s: string): unknown } = process.stdout): pino.DestinationStream {
  return { write: (line: string) => void out.write(formatPrettyLine(line.trimEnd())) };
}

/** pino's error serializer, with the credentials of URLs in the message and stack redacted. */
function errWithoutCredentials(e: Error): unknown {
  const s = pino.stdSerializers.err(e) as unknown;
  if (!s || typeof s !== 'object') return s;
  const out = s as { message?: unknown; stack?: unknown };
  if (typeof out.message === 'string') out.message = redactUrlCredentials(out.message);
  if (typeof out.stack === 'string') out.stack = redactUrlCredentials(out.stack);
  return out;
}

export function createLogger(level: string, name = 'armada', destination?: pino.DestinationStream, format: LogFormat = 'json'): Logger {
  const dest = format === 'pretty' ? prettyDestination(destination ?? process.stdout) : destination;
  return pino(
    {
      name,
      level,
      redact: { paths: REDACT_PATHS, censor: '[redacted]' },
      serializers: { err: errWithoutCredentials },
      hooks: {
        // the message (and any format arguments) of every call
        logMethod(args, method) {
          method.apply(this, args.map((a) => (typeof a === 'string' ? redactUrlCredentials(a) : a)) as Parameters<typeof method>);
        },
      },
      formatters: {
        log: (o) => Object.fromEntries(Object.entries(o).map(([k, v]) => [k, typeof v === 'string' ? redactUrlCredentials(v) : v])),
      },
    },
    dest,
  );
}

export type { Logger };
