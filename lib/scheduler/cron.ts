/**
 * Validation of the schedule strings Temporal accepts, so a bad one is a 400 with a precise detail instead of a
 * server error: 5-field cron (minute hour day-of-month month day-of-week; `*`, lists, ranges, steps, month and day
 * names), the `@yearly … @hourly` shorthands, and `@every <duration>[/<offset>]` (Go durations: 30s, 5m, 1h30m).
 */

const FIELDS = [
  { name: 'minute', min: 0, max: 59 },
  { name: 'hour', min: 0, max: 23 },
  { name: 'day-of-month', min: 1, max: 31 },
  { name: 'month', min: 1, max: 12, names: ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'], base: 1 },
  { name: 'day-of-week', min: 0, max: 7, names: ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'], base: 0 },
] as const;

const SHORTHANDS = new Set(['@yearly', '@annually', '@monthly', '@weekly', '@daily', '@midnight', '@hourly']);
const GO_DURATION = /^(\d+(\.\d+)?(ns|us|µs|ms|s|m|h))+$/;

function durationMs(d: string): number {
  let total = 0;
  const unit: Record<string, number> = { ns: 1e-6, us: 1e-3, µs: 1e-3, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };
  for (const m of d.matchAll(/(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)/g)) total += Number(m[1]) * (unit[m[2] as string] ?? 0);
  return total;
}

function value(field: (typeof FIELDS)[number], token: string): number | string {
  const names = 'names' in field ? (field.names as readonly string[]) : undefined;
  const byName = names?.indexOf(token.toLowerCase()) ?? -1;
  if (byName >= 0 && names) return byName + ('base' in field ? field.base : 0);
  if (!/^\d+$/.test(token)) return `"${token}" is not a number${names ? ' or a name' : ''}`;
  const n = Number(token);
  if (n < field.min || n > field.max) return `${n} is outside ${field.min}-${field.max}`;
  return n;
}

function checkField(field: (typeof FIELDS)[number], text: string): string | null {
  for (const part of text.split(',')) {
    if (part === '') return 'has an empty list item';
    const [range, step, extra] = part.split('/');
    if (extra !== undefined) return `"${part}" has more than one "/"`;
    if (step !== undefined && (!/^\d+$/.test(step) || Number(step) < 1)) return `step "${step}" must be a positive integer`;
    if (range === '*' || range === '?') continue;
    const [lo, hi, more] = (range ?? '').split('-');
    if (more !== undefined) return `"${range}" is not a range`;
    const a = value(field, lo ?? '');
    if (typeof a === 'string') return a;
    if (hi !== undefined) {
      const b = value(field, hi);
      if (typeof b === 'string') return b;
      if (b < a) return `range ${lo}-${hi} is reversed`;
    }
  }
  return null;
}

/** Returns null when Temporal will accept the schedule string, else the precise reason. */
export function cronError(expr: string): string | null {
  const s = expr.trim();
  if (s === '') return 'Invalid cron expression "": it is empty';
  if (s.startsWith('@')) {
    const lower = s.toLowerCase();
    if (SHORTHANDS.has(lower)) return null;
    const every = /^@every(?:\s+(.*))?$/i.exec(s);
    if (every) {
      const [interval, offset, extra] = (every[1] ?? '').trim().split('/');
      if (extra !== undefined) return `Invalid cron expression "${expr}": @every takes <duration>[/<offset>]`;
      if (!GO_DURATION.test(interval ?? '') || durationMs(interval ?? '') < 1000) {
        return `Invalid cron expression "${expr}": @every needs a duration of at least 1s such as 30s, 5m or 1h30m`;
      }
      if (offset !== undefined && !GO_DURATION.test(offset)) return `Invalid cron expression "${expr}": offset "${offset}" is not a duration`;
      return null;
    }
    return `Invalid cron expression "${expr}": unknown shorthand (use @yearly, @monthly, @weekly, @daily, @hourly or @every <duration>)`;
  }
  const parts = s.split(/\s+/);
  if (parts.length !== 5) {
    return `Invalid cron expression "${expr}": expected 5 fields (minute hour day-of-month month day-of-week), got ${parts.length}`;
  }
  for (let i = 0; i < 5; i++) {
    const field = FIELDS[i] as (typeof FIELDS)[number];
    const err = checkField(field, parts[i] as string);
    if (err) return `Invalid cron expression "${expr}": ${field.name} field ${err}`;
  }
  return null;
}

/** Returns null for an IANA zone name the runtime knows (e.g. Asia/Kolkata, UTC), else the reason. */
export function timezoneError(zone: string): string | null {
  if (!/^[A-Za-z][A-Za-z0-9_+-]*(\/[A-Za-z0-9_+-]+)*$/.test(zone) || zone.length > 64) return `Unknown time zone "${zone}": use an IANA name such as UTC or Europe/Paris`;
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone });
    return null;
  } catch {
    return `Unknown time zone "${zone}": use an IANA name such as UTC or Europe/Paris`;
  }
}
