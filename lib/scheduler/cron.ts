/**
 * What Armada itself reads in a schedule string: only the zone. Whether a cron string is valid is Temporal's call
 * (every form it accepts: 5 to 7 fields, `@every 1d`, `CRON_TZ=` prefixes, `#` comments); the schedule routes map
 * its rejection to a 400 with Temporal's own words (specRejection in temporalSchedules.ts).
 */

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
 * instead. Only the plain forms are read; anything else (`@every`, a form not read here) is Temporal's to judge.
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
