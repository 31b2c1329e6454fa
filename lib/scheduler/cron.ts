/**
 * What Armada reads in a schedule string: its zone (a `CRON_TZ=` prefix), and whether it has an accepted form
 * (scheduleExpressionError: 5 fields, a macro, or `@every` of at least a second; docs/scheduler.md#schedule-expressions).
 * Within that form the values (ranges, names) are Temporal's to judge; the schedule routes map its rejection to a 400
 * with Temporal's own words (specRejection in temporalSchedules.ts).
 */

/**
 * The shortest interval between two runs of one schedule: `@every` takes no less (Temporal's own floor, `interval is
 * too small`, which the scheduler's tests and benchmarks run on: `@every 1s`, `@every 2s`); 5-field cron has no
 * seconds field, so it fires at most once a minute.
 */
export const MIN_INTERVAL_MS = 1000;

/** The macros Temporal expands (handlePredefinedCronStrings), as it spells them: lower case only. */
export const CRON_MACROS = ['@yearly', '@annually', '@monthly', '@weekly', '@daily', '@midnight', '@hourly'] as const;

/** What a schedule expression may be, in the words of every 400 that refuses one (and of the OpenAPI documents). */
export const ACCEPTED_SCHEDULES =
  'accepted: 5 fields "minute hour day-of-month month day-of-week" separated by spaces (no seconds or year field), ' +
  `${CRON_MACROS.join(', ')}, or "@every <duration>[/<offset>]" of at least 1s (units d, h, m, s, ms, us, ns, e.g. @every 5m); ` +
  'optionally a CRON_TZ=<zone> prefix and a " # comment"';

/** A cron field as accepted: digits, month and weekday names, `*`, ranges, steps and lists. */
const FIELD = '[0-9A-Za-z*,/-]+';
/** A duration as Go (and Temporal, with days) reads it, without a sign: `5m`, `1h30m`, `1.5h`, `1d`. */
const DURATION = '(?:[0-9]+(?:\\.[0-9]+)?(?:ns|us|ms|s|m|h|d))+';
/** A zone name as timezoneError takes it. */
const ZONE = '[A-Za-z][A-Za-z0-9_+-]*(?:/[A-Za-z0-9_+-]+)*';
/** The controls a comment may not hold (C0, DEL, C1, bidi overrides and isolates), as inside a character class. */
const COMMENT_CONTROLS = '\\u0000-\\u001f\\u007f-\\u009f\\u202a-\\u202e\\u2066-\\u2069';

/**
 * The form every accepted schedule expression has, as one pattern (ECMA-262 and Python alike) that the request schemas
 * carry, so the OpenAPI documents say what scheduleExpressionError says (less the 1-second floor of `@every`, which no
 * pattern can say over compound durations). No white space but single-or-more spaces between parts.
 */
export const SCHEDULE_EXPRESSION_PATTERN =
  `^(?:(?:CRON_)?TZ=${ZONE} +)?` +
  `(?:${CRON_MACROS.join('|')}|@every ${DURATION}(?:/${DURATION})?|${FIELD} +${FIELD} +${FIELD} +${FIELD} +${FIELD})` +
  `(?: +#[^${COMMENT_CONTROLS}]*)?$`;
const SCHEDULE_EXPRESSION = new RegExp(SCHEDULE_EXPRESSION_PATTERN);

const UNIT_MS: Record<string, number> = { ns: 1e-6, us: 1e-3, ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** A duration's length in milliseconds (DURATION's form). */
function durationMs(text: string): number {
  let ms = 0;
  for (const [, n, unit] of text.matchAll(/([0-9]+(?:\.[0-9]+)?)(ns|us|ms|s|m|h|d)/g)) ms += Number(n) * (UNIT_MS[unit as string] as number);
  return ms;
}

/** A character named for a message: `" "`-quoted when printable, else its code point (and name when it has a common one). */
function characterName(c: string): string {
  const names: Record<string, string> = { '\t': 'a tab', '\n': 'a line feed', '\r': 'a carriage return', '\u00a0': 'a no-break space', '\u000b': 'a vertical tab', '\u000c': 'a form feed' };
  const code = `U+${(c.codePointAt(0) as number).toString(16).toUpperCase().padStart(4, '0')}`;
  return names[c] ? `${names[c]} (${code})` : `${code}`;
}

/**
 * Why a schedule expression is refused, or null when it has an accepted form (SCHEDULE_EXPRESSION_PATTERN) and an
 * `@every` interval of at least MIN_INTERVAL_MS. Each reason says what is wrong and ends with what is accepted. The
 * values inside the fields (`61`, `mon-fry`) stay Temporal's to judge, in its words.
 */
export function scheduleExpressionError(expr: string): string | null {
  const refuse = (why: string) => `${why}; ${ACCEPTED_SCHEDULES}`;
  const nth = nthWeekdayError(expr);
  if (nth) return nth; // before the form: its own words say why `#` there is a trap
  if (!SCHEDULE_EXPRESSION.test(expr)) {
    // the first character no expression may hold outside a comment, then the parts
    const hash = expr.search(/ +#/);
    const body = hash >= 0 ? expr.slice(0, hash) : expr;
    const odd = /[^\x21-\x7e ]/.exec(body)?.[0];
    if (odd) return refuse(/\s/.test(odd) ? `it holds ${characterName(odd)}: only spaces separate its parts` : `it holds ${characterName(odd)}, which no cron field holds`);
    if (hash >= 0) {
      const control = new RegExp(`[${COMMENT_CONTROLS}]`).exec(expr.slice(hash))?.[0];
      if (control) return refuse(`its comment holds ${characterName(control)}`);
    }
    if (/^ /.test(expr) || (hash < 0 && / $/.test(expr))) return refuse('it starts or ends with a space');
    const rest = body.replace(new RegExp(`^(?:CRON_)?TZ=${ZONE} +`), '');
    if (/^(?:CRON_)?TZ=/.test(rest)) return refuse('its zone prefix must be CRON_TZ=<zone> followed by a space and the schedule');
    if (rest.startsWith('@every')) return refuse('"@every" must be followed by one space and a duration with its unit, such as 30s, 5m or 1h30m');
    if (rest.startsWith('@')) return refuse(`"${rest.split(' ')[0]}" is not a macro`);
    const fields = rest.split(/ +/).filter(Boolean);
    if (fields.length === 6) return refuse('it has 6 fields: a 6th field would be a year, which is not accepted');
    if (fields.length === 7) return refuse('it has 7 fields: a first field of seconds and a last of years are not accepted');
    if (fields.length !== 5) return refuse(`it has ${fields.length} field${fields.length === 1 ? '' : 's'}`);
    const bad = fields.find((f) => !new RegExp(`^${FIELD}$`).test(f));
    return refuse(bad !== undefined ? `"${bad}" is not a cron field (digits, names such as MON or JAN, *, ranges a-b, steps /n and lists a,b)` : 'it is not in an accepted form');
  }
  const every = /@every ([^/ ]+)/.exec(expr.replace(/ +#.*$/, ''))?.[1];
  if (every !== undefined && durationMs(every) < MIN_INTERVAL_MS) return refuse(`its interval ${every} is shorter than 1s, the shortest interval between two runs`);
  return null;
}

/** The zone a `CRON_TZ=<zone> …` (or `TZ=<zone> …`) prefix names, if the string has one. */
export function cronZone(expr: string): string | undefined {
  return /^\s*(?:CRON_)?TZ=(\S+)\s/.exec(expr)?.[1];
}

const UNKNOWN_ZONE = (zone: string) => `Unknown time zone "${zone}": use an IANA name such as UTC or Europe/Paris`;

/**
 * Returns null for an IANA zone name the runtime knows (e.g. Asia/Kolkata, UTC), else the reason. Names are
 * case-sensitive, as in Temporal (Go's tz database): the runtime's Intl takes `utc` and `europe/paris`, Temporal then
 * refused them in words about the cron string. Intl answers with its own name for an alias (`Europe/Kyiv` is
 * `Europe/Kiev`, `EST5EDT` `America/New_York`), so a wrong-cased alias (`europe/kyiv`) is not the resolved name in
 * another case; every part of every tz database name starts with a capital letter, which such a name lacks.
 */
export function timezoneError(zone: string): string | null {
  if (!/^[A-Za-z][A-Za-z0-9_+-]*(\/[A-Za-z0-9_+-]+)*$/.test(zone) || zone.length > 64) return UNKNOWN_ZONE(zone);
  let resolved: string;
  try {
    resolved = new Intl.DateTimeFormat('en-US', { timeZone: zone }).resolvedOptions().timeZone;
  } catch {
    return UNKNOWN_ZONE(zone);
  }
  if (resolved !== zone && resolved.toLowerCase() === zone.toLowerCase()) return `${UNKNOWN_ZONE(zone)} (names are case-sensitive: "${resolved}")`;
  if (!zone.split('/').every((part) => /^[A-Z]/.test(part))) return `${UNKNOWN_ZONE(zone)} (names are case-sensitive)`;
  return null;
}

/** Temporal's refusal of a zone (one the runtime knows and its tz database does not), said as the zone it is. */
export function temporalZoneRejection(reason: string): string | null {
  const zone = /unknown time zone (\S+)/i.exec(reason)?.[1];
  return zone ? UNKNOWN_ZONE(zone) : null;
}

/**
 * The nth weekday of a month (`MON#2`, `1#1`, Quartz's notation), which Temporal's cron does not have: there `#` starts
 * a comment, so `0 9 * * MON#2` ran every Monday. The reason it is refused, or null.
 */
export function nthWeekdayError(expr: string): string | null {
  const m = /(?:^|\s)([A-Za-z0-9,-]*[A-Za-z0-9])#(\d+)/.exec(expr);
  return m ? `"${m[1]}#${m[2]}" is not supported (the nth weekday of a month); "#" starts a comment here, so it would run on every ${m[1]}` : null;
}

const MONTHS = ['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC'];
const MONTH_NAMES = ['January', 'February', 'March', 'April', 'May', 'June', 'July', 'August', 'September', 'October', 'November', 'December'];
/** The most days each month can have (February: 29, in a leap year). */
const MONTH_DAYS = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/**
 * The values a cron field selects within [min, max] (`*`, `?`, numbers, names, ranges, steps, lists), or null for
 * anything else: a form this reading does not know is left to Temporal, never judged here.
 */
function fieldValues(field: string, min: number, max: number, names: string[] = []): Set<number> | null {
  const value = (s: string): number | null => {
    const named = names.indexOf(s.toUpperCase());
    if (named >= 0) return named + min;
    return /^\d{1,4}$/.test(s) ? Number(s) : null;
  };
  const out = new Set<number>();
  for (const item of field.split(',')) {
    const m = /^([^/]+)(?:\/(\d{1,4}))?$/.exec(item);
    if (!m) return null;
    const [, range = '', stepText] = m;
    const step = stepText === undefined ? 1 : Number(stepText);
    if (step < 1) return null;
    let from: number | null;
    let to: number | null;
    if (range === '*' || range === '?') [from, to] = [min, max];
    else if (range.includes('-')) {
      const [a = '', b = ''] = range.split('-');
      [from, to] = [value(a), value(b)];
    } else {
      from = value(range);
      to = stepText === undefined ? from : max;
    }
    if (from === null || to === null || from < min || to > max || from > to) return null;
    for (let v = from; v <= to; v += step) out.add(v);
  }
  return out;
}

/**
 * Why a cron string can never fire (again), or null: a day of the month that none of its months has (`0 0 30 2 *`,
 * `0 0 31 4,6,9,11 *`) while the day of the week is left open, or years that are all past (`0 9 * * * 2020`).
 * Temporal takes such a string and its schedule simply never runs (`nextRun: null` while `active`), so it is refused
 * instead. Only the plain forms are read; anything else (`@every`, a form not read here) is Temporal's to judge. The
 * routes refuse a year field before this is asked (scheduleExpressionError), so its years are read only here.
 */
export function neverFiresError(expr: string, now: Date = new Date()): string | null {
  const body = expr.replace(/^\s*(?:CRON_)?TZ=\S+\s+/, '').replace(/\s#.*$/, '').trim();
  if (body.startsWith('@')) return null;
  const fields = body.split(/\s+/);
  if (fields.length < 5 || fields.length > 7) return null;
  const [dom, month, dow, year] = fields.length === 7 ? fields.slice(3) : [...fields.slice(2, 5), fields[5]];
  if (year !== undefined) {
    const years = fieldValues(year, 1970, 2099);
    // the year at this moment somewhere on Earth, at the earliest (UTC-12): a year before it is past everywhere
    const thisYear = new Date(now.getTime() - 12 * 3600_000).getUTCFullYear();
    if (years?.size && Math.max(...years) < thisYear) return `its years (${year}) are all past`;
  }
  if (dow !== '*' && dow !== '?') return null;
  const days = fieldValues(dom as string, 1, 31);
  const months = fieldValues(month as string, 1, 12, MONTHS);
  if (!days?.size || !months?.size) return null;
  const first = Math.min(...days);
  if ([...months].some((m) => first <= (MONTH_DAYS[m - 1] as number))) return null;
  const named = [...months].map((m) => MONTH_NAMES[m - 1]).join(', ');
  return `none of its months (${named}) has ${first === Math.max(...days) ? `a day ${first}` : `a day ${first} or later`}`;
}
