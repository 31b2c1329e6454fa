/**
 * What Armada reads in a schedule string: its zone (a `CRON_TZ=` prefix), whether it has an accepted form
 * (scheduleExpressionError: 5 fields, a macro, or `@every` of whole seconds, at least one;
 * docs/scheduler.md#schedule-expressions), and whether it ever fires in its zone (neverFiresError). Within that form
 * the values (ranges, names) are Temporal's to judge; the schedule routes map its rejection to a 400 with Temporal's
 * own words (specRejection in temporalSchedules.ts).
 */
import { offsetMs } from './oneTime';

/**
 * The shortest interval between two runs of one schedule: `@every` takes no less (Temporal's own floor, `interval is
 * too small`, which the scheduler's tests and benchmarks run on: `@every 1s`, `@every 2s`); 5-field cron has no
 * seconds field, so it fires at most once a minute.
 */
export const MIN_INTERVAL_MS = 1000;

/** The longest schedule expression a request may give (the request schemas' maxLength). */
export const MAX_SCHEDULE_CHARS = 200;

/** The macros Temporal expands (handlePredefinedCronStrings), as it spells them: lower case only. */
export const CRON_MACROS = ['@yearly', '@annually', '@monthly', '@weekly', '@daily', '@midnight', '@hourly'] as const;

/** What a schedule expression may be, in the words of every 400 that refuses one (and of the OpenAPI documents). */
export const ACCEPTED_SCHEDULES =
  'accepted: 5 fields "minute hour day-of-month month day-of-week" separated by spaces (no seconds or year field) ' +
  `or ${CRON_MACROS.join(', ')}, either optionally after a CRON_TZ=<zone> prefix; or "@every <duration>[/<offset>]" ` +
  'of whole seconds, at least 1s (units d, h, m, s, ms, us, ns, e.g. @every 5m; no zone prefix: intervals count from ' +
  'the Unix epoch, the same in every zone); optionally a " # comment"';

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
 * carry, so the OpenAPI documents say what scheduleExpressionError says (less the whole seconds and 1-second floor of
 * `@every`, which no pattern can say over compound durations). No white space but single-or-more spaces between parts;
 * a zone prefix only before a calendar form.
 */
export const SCHEDULE_EXPRESSION_PATTERN =
  `^(?:@every ${DURATION}(?:/${DURATION})?|(?:(?:CRON_)?TZ=${ZONE} +)?(?:${CRON_MACROS.join('|')}|${FIELD} +${FIELD} +${FIELD} +${FIELD} +${FIELD}))` +
  `(?: +#[^${COMMENT_CONTROLS}]*)?$`;
const SCHEDULE_EXPRESSION = new RegExp(SCHEDULE_EXPRESSION_PATTERN);

const UNIT_NS: Record<string, bigint> = { ns: 1n, us: 1000n, ms: 1_000_000n, s: 1_000_000_000n, m: 60_000_000_000n, h: 3_600_000_000_000n, d: 86_400_000_000_000n };
const SECOND_NS = 1_000_000_000n;
/** Go's int64 bound: the longest duration in nanoseconds (about 292 years, Temporal parses none longer), the largest step. */
const MAX_DURATION_NS = 2n ** 63n - 1n;

/** A duration's exact length in nanoseconds (DURATION's form; a fraction of a nanosecond is dropped, as Go drops it). */
function durationNs(text: string): bigint {
  let ns = 0n;
  for (const [, whole = '', fraction = '', unit] of text.matchAll(/([0-9]+)(?:\.([0-9]+))?(ns|us|ms|s|m|h|d)/g)) {
    const per = UNIT_NS[unit as string] as bigint;
    ns += BigInt(whole) * per + (fraction ? (BigInt(fraction) * per) / 10n ** BigInt(fraction.length) : 0n);
  }
  return ns;
}

/** Why an `@every` interval (and its offset) is refused, or null: under 1s, past Go's durations, or not whole seconds. */
function intervalError(every: string): string | null {
  const [interval = '', offset] = every.split('/');
  const ns = durationNs(interval);
  if (ns < SECOND_NS) return `its interval ${interval} is shorter than 1s, the shortest interval between two runs`;
  for (const [what, text, length] of [['interval', interval, ns], ['offset', offset, offset === undefined ? 0n : durationNs(offset)]] as const) {
    if (text === undefined) continue;
    if (length > MAX_DURATION_NS) return `its ${what} ${text} is longer than Temporal's longest duration (2562047h, about 292 years)`;
    if (length % SECOND_NS !== 0n) {
      const kept = `${length / SECOND_NS}s`;
      return `its ${what} ${text} is not a whole number of seconds (Temporal counts whole seconds: it would ${what === 'interval' ? `run every ${kept}` : `use ${kept}`})`;
    }
  }
  return null;
}

/** A character named for a message: `" "`-quoted when printable, else its code point (and name when it has a common one). */
function characterName(c: string): string {
  const names: Record<string, string> = { '\t': 'a tab', '\n': 'a line feed', '\r': 'a carriage return', '\u00a0': 'a no-break space', '\u000b': 'a vertical tab', '\u000c': 'a form feed' };
  const code = `U+${(c.codePointAt(0) as number).toString(16).toUpperCase().padStart(4, '0')}`;
  return names[c] ? `${names[c]} (${code})` : `${code}`;
}

/**
 * Why a schedule expression is refused, or null when it has an accepted form (SCHEDULE_EXPRESSION_PATTERN) and an
 * `@every` interval of whole seconds, at least MIN_INTERVAL_MS (Temporal truncates an interval to whole seconds:
 * `@every 1.5s` ran every second). Each reason says what is wrong and ends with what is accepted; the notations of
 * other crons that Temporal's lacks (`MON#2`, `L`, `15W`) say so in their own words. The values inside the fields
 * (`61`, `mon-fry`) stay Temporal's to judge, in its words.
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
    if (rest !== body && rest.startsWith('@every')) {
      return refuse('a CRON_TZ= zone does not apply to "@every" (Temporal drops it): an interval counts from the Unix epoch, the same instants in every zone');
    }
    if (rest.startsWith('@every')) return refuse('"@every" must be followed by one space and a duration with its unit, such as 30s, 5m or 1h30m');
    if (rest.startsWith('@')) return refuse(`"${rest.split(' ')[0]}" is not a macro`);
    const fields = rest.split(/ +/).filter(Boolean);
    if (fields.length === 6) return refuse('it has 6 fields: a 6th field would be a year, which is not accepted');
    if (fields.length === 7) return refuse('it has 7 fields: a first field of seconds and a last of years are not accepted');
    if (fields.length !== 5) return refuse(`it has ${fields.length} field${fields.length === 1 ? '' : 's'}`);
    const bad = fields.find((f) => !new RegExp(`^${FIELD}$`).test(f));
    return refuse(bad !== undefined ? `"${bad}" is not a cron field (digits, names such as MON or JAN, *, ranges a-b, steps /n and lists a,b)` : 'it is not in an accepted form');
  }
  const every = /^@every (\S+)/.exec(expr)?.[1];
  const interval = every === undefined ? null : intervalError(every);
  if (interval) return refuse(interval);
  return quartzDayError(expr) ?? stepError(expr);
}

const FIELD_NAMES = ['minute', 'hour', 'day of the month', 'month', 'day of the week'];

/**
 * A step Temporal reads with Go's strconv.Atoi, whose words name no field (`strconv.Atoi: parsing "x": invalid syntax`,
 * `… value out of range`): one that is no number, or past Go's int64. The reason, or null; a step of 0 or below stays
 * Temporal's (`Minute has invalid Step`).
 */
function stepError(expr: string): string | null {
  const fields = expr.replace(/^(?:CRON_)?TZ=\S+ +/, '').replace(/ +#.*$/, '').split(/ +/);
  if (fields.length !== 5) return null;
  for (const [i, field] of fields.entries()) {
    for (const item of field.split(',')) {
      const parts = item.split('/');
      if (parts.length !== 2) continue; // none, or Temporal's `too many slashes`
      const step = parts[1] as string;
      const what = `the step in "${item}" (the ${FIELD_NAMES[i]})`;
      if (!/^-?\d+$/.test(step)) return `${what} is not a whole number: a step after "/" is a whole number of at least 1`;
      if (BigInt(step) > MAX_DURATION_NS) return `${what} is too large: a step after "/" is a whole number of at least 1`;
    }
  }
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
  // read before a comment (` # …`): `# ticket 1#2` there is text, not a field
  const m = /(?:^|\s)([A-Za-z0-9,-]*[A-Za-z0-9])#(\d+)/.exec(expr.replace(/ +#.*$/s, ''));
  return m ? `"${m[1]}#${m[2]}" is not supported (the nth weekday of a month); "#" starts a comment here, so it would run on every ${m[1]}` : null;
}

/**
 * Quartz's `L` and `W` (the last day of the month, the weekday nearest a day, `5L` the last Friday), which Temporal's
 * cron does not have: it answered `DayOfMonth is not in range [1-31]`, true but no help. The reason, or null.
 */
export function quartzDayError(expr: string): string | null {
  const fields = expr.replace(/^(?:CRON_)?TZ=\S+ +/, '').replace(/ +#.*$/, '').split(/ +/);
  if (fields.length !== 5) return null;
  const parts = (field: string) => field.split(/[,/-]/);
  const dom = parts(fields[2] as string).find((p) => /^(?:L|LW|\d+W)$/i.test(p));
  if (dom !== undefined) {
    const what = /^L$/i.test(dom) ? 'the last day of the month' : 'the weekday nearest a day of the month';
    return `"${dom}" (${what}) is not supported: the day of the month takes numbers 1-31 (with *, ranges, steps and lists)`;
  }
  const dow = parts(fields[4] as string).find((p) => /^(?:L|\d+L)$/i.test(p));
  if (dow !== undefined) return `"${dow}" (the last given weekday of a month) is not supported: the day of the week takes 0-7 (0 and 7 are Sunday) or names such as MON (with *, ranges, steps and lists)`;
  return null;
}

const MONTHS = ['january', 'february', 'march', 'april', 'may', 'june', 'july', 'august', 'september', 'october', 'november', 'december'];
const WEEKDAYS = ['sunday', 'monday', 'tuesday', 'wednesday', 'thursday', 'friday', 'saturday'];
const MONTH_NAMES = MONTHS.map((m) => m[0]?.toUpperCase() + m.slice(1));
/** The most days each month can have (February: 29, in a leap year). */
const MONTH_DAYS = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
/** Temporal's calendar years (minCalendarYear, maxCalendarYear): past 2100 a calendar spec has no time at all. */
const FIRST_YEAR = 2000;
const LAST_CALENDAR_YEAR = 2100;
const DAY_MS = 86_400_000;

type FieldMode = 'int' | 'month' | 'dow' | 'year';

/**
 * The values a cron field selects, read as Temporal reads it (makeRange, parseValue: month names by a prefix of at
 * least 3 letters, weekday names by one of at least 2, 7 as Sunday, `x/n` from x to the end), or null for anything
 * Temporal would refuse or this reading does not know: that is left to Temporal, never judged here.
 */
function fieldValues(field: string, min: number, max: number, mode: FieldMode): Set<number> | null {
  const value = (s: string, lo: number): number | null => {
    const names = mode === 'month' ? MONTHS : mode === 'dow' ? WEEKDAYS : [];
    if (s.length >= (mode === 'month' ? 3 : 2)) {
      const i = names.findIndex((n) => n.startsWith(s.toLowerCase()));
      if (i >= 0) {
        const v = mode === 'month' ? i + 1 : i;
        return v >= lo && v <= max ? v : null;
      }
    }
    if (!/^\d{1,9}$/.test(s)) return null;
    const n = Number(s);
    return n >= lo && n <= max ? n : null;
  };
  const out = new Set<number>();
  for (const item of field.split(',')) {
    const slash = item.split('/');
    if (slash.length > 2) return null;
    const [range = '', stepText] = slash;
    const step = stepText === undefined ? 1 : /^\d{1,9}$/.test(stepText) ? Number(stepText) : 0;
    if (step < 1) return null;
    let from: number | null = min;
    let to: number | null = max;
    if (range !== '*') {
      const dash = range.split('-');
      if (dash.length > 2) return null;
      from = value(dash[0] as string, min);
      to = from === null ? null : dash.length === 2 ? value(dash[1] as string, from) : stepText === undefined ? from : max;
    }
    if (from === null || to === null) return null;
    for (let v = from; v <= to; v += step) out.add(mode === 'dow' && v === 7 ? 0 : v);
  }
  return out;
}

/** A cron string's calendar as Temporal reads it (5 fields, a macro, or an older 6- or 7-field one), or null. */
interface Calendar {
  seconds: number[];
  minutes: number[];
  hours: number[];
  days: Set<number>;
  months: Set<number>;
  weekdays: Set<number>;
  years: Set<number> | null;
  fields: { day: string; weekday: string; year?: string };
}

const MACRO_FIELDS: Record<string, string> = { '@yearly': '0 0 1 1 *', '@annually': '0 0 1 1 *', '@monthly': '0 0 1 * *', '@weekly': '0 0 * * 0', '@daily': '0 0 * * *', '@midnight': '0 0 * * *', '@hourly': '0 * * * *' };

function calendarOf(expr: string): Calendar | null {
  let body = expr.replace(/^\s*(?:CRON_)?TZ=\S+\s+/, '').replace(/#.*$/, '').trim();
  if (body.startsWith('@every')) return null;
  body = MACRO_FIELDS[body] ?? body;
  const fields = body.split(/\s+/);
  if (fields.length < 5 || fields.length > 7) return null;
  const [second, minute, hour, day, month, weekday, year] = fields.length === 7 ? fields : ['0', ...fields];
  const sorted = (set: Set<number> | null) => (set ? [...set].sort((a, b) => a - b) : null);
  const seconds = sorted(fieldValues(second as string, 0, 59, 'int'));
  const minutes = sorted(fieldValues(minute as string, 0, 59, 'int'));
  const hours = sorted(fieldValues(hour as string, 0, 23, 'int'));
  const days = fieldValues(day as string, 1, 31, 'int');
  const months = fieldValues(month as string, 1, 12, 'month');
  const weekdays = fieldValues(weekday as string, 0, 7, 'dow');
  const years = year === undefined || year === '*' ? null : fieldValues(year, FIRST_YEAR, LAST_CALENDAR_YEAR, 'year');
  if (!seconds || !minutes || !hours || !days || !months || !weekdays || (year !== undefined && year !== '*' && !years)) return null;
  return { seconds, minutes, hours, days, months, weekdays, years, fields: { day: day as string, weekday: weekday as string, ...(year !== undefined ? { year } : {}) } };
}

const daysIn = (month: number, year: number): number => (month === 2 ? (year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0) ? 29 : 28) : (MONTH_DAYS[month - 1] as number));

/**
 * The instants a day's wall-clock times stand for in a zone as Temporal's calendar finds them (Go's time.Date, then
 * `nextTs.Hour() != h` skips a time a daylight-saving change jumped over), the first after `now`, or null; and the
 * change's gap that day (ms; negative when the clocks go back). `dayMs` is the day's midnight as if it were UTC. A day
 * without an offset change (the same offset a day before and two after) costs two offset look-ups; on a day with one,
 * a few times are each placed with their own look-ups, more times through the change's instant (found once).
 */
function firstRunOfDay(cal: Calendar, zone: string, dayMs: number, now: number): { run: number | null; gapMs: number } {
  // offsets lie within [-12h, +14h]: a day whose last wall-clock time is past everywhere has nothing to come
  if (dayMs + DAY_MS + 12 * 3_600_000 <= now) return { run: null, gapMs: 0 };
  const before = offsetMs(zone, dayMs - DAY_MS);
  const after = offsetMs(zone, dayMs + 2 * DAY_MS);
  let offsetAt = (_t: number) => before;
  if (before !== after) {
    if (cal.hours.length * cal.minutes.length * cal.seconds.length <= 4) offsetAt = (t: number) => offsetMs(zone, t);
    else {
      // the first second of the new offset (one change at most in three days: every tz database zone has fewer)
      let [lo, hi] = [dayMs - DAY_MS, dayMs + 2 * DAY_MS];
      while (hi - lo > 1000) {
        const mid = lo + Math.floor((hi - lo) / 2000) * 1000;
        if (offsetMs(zone, mid) === before) lo = mid;
        else hi = mid;
      }
      offsetAt = (t: number) => (t < hi ? before : after);
    }
  }
  const earliest = Math.min(before, after);
  for (const h of cal.hours) {
    if (dayMs + (h + 1) * 3_600_000 - earliest <= now) continue; // every time of this hour is past
    for (const m of cal.minutes) {
      for (const s of cal.seconds) {
        const wall = dayMs + h * 3_600_000 + m * 60_000 + s * 1000;
        // Go's time.Date: the offset at the wall time read as UTC, then the one at the instant that gives
        const run = wall - offsetAt(wall - offsetAt(wall));
        if (new Date(run + offsetAt(run)).getUTCHours() !== h) continue; // skipped by the change
        if (run > now) return { run, gapMs: after - before };
      }
    }
  }
  return { run: null, gapMs: after - before };
}

const isoDate = (dayMs: number): string => new Date(dayMs).toISOString().slice(0, 10);
const hoursText = (ms: number): string => (ms % 3_600_000 === 0 ? `${ms / 3_600_000}h` : `${ms / 60_000} minutes`);

/**
 * Why a cron string never fires (again) in `zone`, or null: Temporal takes such a string and its schedule simply never
 * runs (`nextRun: null` while `active`), so the routes refuse it. It never fires when no time up to the end of 2100
 * (Temporal's last calendar year) matches it: a day of the month none of its months has (`0 0 30 2 *`,
 * `0 0 31 4,6,9,11 MON`: Temporal matches the day of the month and of the week both), a day of the week that day never
 * falls on, years all past (an older 7-field string), or times a daylight-saving change skips on every day it names
 * (`30 2 25-31 3 SUN` in Europe/Berlin: the last Sunday of March, when 02:00 becomes 03:00). Read day by day, as
 * Temporal's calendar does (days by arithmetic, offsets through the runtime's tz database only for the days matched):
 * a string that fires answers at its first day, one that never does costs at most a few hundred look-ups. Only
 * Temporal's calendar forms are read; `@every` and anything Temporal would refuse are left to Temporal. `zone` must be
 * a valid IANA zone.
 */
export function neverFiresError(expr: string, zone = 'UTC', now: Date = new Date()): string | null {
  const cal = calendarOf(expr);
  if (!cal) return null;
  const nowMs = now.getTime();
  // local dates run from a day behind UTC's to a day ahead: start the day before
  const today = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate());
  const firstYear = Math.max(FIRST_YEAR, new Date(today - DAY_MS).getUTCFullYear());
  if (cal.years && Math.max(...cal.years) < firstYear) return `its years (${cal.fields.year}) are all past`;
  const months = [...cal.months].sort((a, b) => a - b);
  const days = [...cal.days].sort((a, b) => a - b);
  const first = days[0] as number;
  if (!months.some((m) => first <= (MONTH_DAYS[m - 1] as number))) {
    const named = months.map((m) => MONTH_NAMES[m - 1]).join(', ');
    return `none of its months (${named}) has ${first === days[days.length - 1] ? `a day ${first}` : `a day ${first} or later`}`;
  }
  let firstDay: number | null = null;
  let gapDay: { dayMs: number; gapMs: number } | null = null;
  for (let y = firstYear; y <= LAST_CALENDAR_YEAR; y++) {
    if (cal.years && !cal.years.has(y)) continue;
    for (const mo of months) {
      for (const d of days) {
        if (d > daysIn(mo, y)) break;
        const dayMs = Date.UTC(y, mo - 1, d);
        if (dayMs < today - DAY_MS || !cal.weekdays.has(new Date(dayMs).getUTCDay())) continue;
        firstDay ??= dayMs;
        const { run, gapMs } = firstRunOfDay(cal, zone, dayMs, nowMs);
        if (run !== null) return null;
        if (gapMs > 0 && dayMs > today) gapDay ??= { dayMs, gapMs };
      }
    }
  }
  if (firstDay === null) {
    const dates = `its days of the month (${cal.fields.day}) and of the week (${cal.fields.weekday})${cal.years ? ` in its years (${cal.fields.year})` : ''}`;
    return `no date from now to the end of ${LAST_CALENDAR_YEAR} (Temporal's last calendar year) matches both ${dates}`;
  }
  if (gapDay) {
    return `in ${zone} every day it names is one whose daylight-saving change skips its times (on ${isoDate(gapDay.dayMs)}, the first, the clocks skip ${hoursText(gapDay.gapMs)})`;
  }
  return `no time it names is still to come (up to the end of ${LAST_CALENDAR_YEAR}, Temporal's last calendar year)`;
}
