/**
 * The time of a one-time schedule: `now`, or an ISO 8601 date-time (`2026-03-01T09:30`, seconds optional, `T` or a
 * space). With an offset (`Z`, `+05:30`) it names that instant; without one it is a wall-clock time in the schedule's
 * IANA zone. A wall-clock time that does not exist in the zone (skipped by a daylight-saving change) moves forward by
 * the length of the gap; one that exists twice (the hour repeated in autumn) is the later of the two. Fractions of a
 * second round up to the next whole second (Temporal's calendar counts whole seconds).
 */

/** The pattern the API schema gives `at`; the calendar checks (month 13, 30 February, in the past, after 2100) are parseRunAt's. */
export const AT_PATTERN = '^(now|\\d{4}-\\d{2}-\\d{2}[T ]\\d{2}:\\d{2}(:\\d{2}(\\.\\d{1,9})?)?(Z|[+-]\\d{2}:\\d{2})?)$';
/** The same without `now`: a one-time schedule can be moved to another time, not to now (that is a new schedule). */
export const DATE_TIME_PATTERN = '^\\d{4}-\\d{2}-\\d{2}[T ]\\d{2}:\\d{2}(:\\d{2}(\\.\\d{1,9})?)?(Z|[+-]\\d{2}:\\d{2})?$';

/**
 * The latest instant a one-time schedule may run: the end of the last year Temporal's calendar specs take (years
 * 2000–2100); a later one was refused by Temporal in its own words (`Year Start is not in range [2000-2100]`).
 */
export const LATEST_RUN_AT = '2100-12-31T23:59:59Z';
const LATEST_RUN_AT_MS = Date.parse(LATEST_RUN_AT);

const AT = /^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2})(?::(\d{2})(\.\d{1,9})?)?(Z|([+-])(\d{2}):(\d{2}))?$/;

/** One formatter per zone (building one costs far more than formatting with it). */
const formatters = new Map<string, Intl.DateTimeFormat>();

/** The zone's offset from UTC (ms) at an instant. `zone` must be a valid IANA zone. */
export function offsetMs(zone: string, utcMs: number): number {
  let format = formatters.get(zone);
  if (!format) {
    format = new Intl.DateTimeFormat('en-US', { timeZone: zone, hourCycle: 'h23', year: 'numeric', month: 'numeric', day: 'numeric', hour: 'numeric', minute: 'numeric', second: 'numeric' });
    if (formatters.size < 1000) formatters.set(zone, format);
  }
  const parts = format.formatToParts(new Date(utcMs));
  const get = (type: string) => Number(parts.find((p) => p.type === type)?.value);
  const wall = Date.UTC(get('year'), get('month') - 1, get('day'), get('hour'), get('minute'), get('second'));
  return wall - Math.floor(utcMs / 1000) * 1000;
}

const DAY_MS = 86_400_000;

/**
 * The instant a wall-clock time (given as if it were UTC) stands for in a zone. The zone's offsets a day before and a
 * day after give the candidates (one offset change at most lies between); those whose wall clock reads `wallMs` are
 * the instants it names: the later when there are two (the repeated hour), and none in a gap, where the offset from
 * before the change moves it forward by the gap. Two passes from the offset at `wallMs` got both cases wrong in zones
 * west of UTC (America/New_York: 02:30 on the spring day was 01:30 EST, the autumn 01:30 the first one).
 */
function zonedToUtc(wallMs: number, zone: string): number {
  const before = offsetMs(zone, wallMs - DAY_MS);
  const after = offsetMs(zone, wallMs + DAY_MS);
  const named = [wallMs - before, wallMs - after].filter((t) => t + offsetMs(zone, t) === wallMs);
  return named.length ? Math.max(...named) : wallMs - before;
}

/**
 * The instant of `at` (or 'now'), or the reason it is refused: not a calendar date, not in the future of `now`, or
 * after LATEST_RUN_AT.
 * `zone` must be a valid IANA zone (checked before).
 */
export function parseRunAt(at: string, zone: string, now: Date): { runAt: Date | 'now' } | { error: string } {
  if (at === 'now') return { runAt: 'now' };
  const m = AT.exec(at);
  if (!m) return { error: `Invalid time "${at}": use now or an ISO 8601 date-time such as 2026-03-01T09:30 (optionally with Z or +05:30)` };
  const [year, month, day, hour, minute, second] = [m[1], m[2], m[3], m[4], m[5], m[6] ?? '0'].map(Number) as [number, number, number, number, number, number];
  const wall = Date.UTC(year, month - 1, day, hour, minute, second);
  const d = new Date(wall);
  if (month < 1 || month > 12 || d.getUTCDate() !== day || d.getUTCMonth() !== month - 1 || hour > 23 || minute > 59 || second > 59) {
    return { error: `Invalid time "${at}": not a date and time of the calendar` };
  }
  // an offset past ±23:59 is no offset (RFC 3339); `+99:99` used to move the run days away without a word
  if (m[8] && m[8] !== 'Z' && (Number(m[10]) > 23 || Number(m[11]) > 59)) {
    return { error: `Invalid time "${at}": the UTC offset ${m[8]} is out of range (at most ±23:59)` };
  }
  let instant: number;
  if (m[8] === 'Z') instant = wall;
  else if (m[8]) instant = wall - (m[9] === '-' ? -1 : 1) * (Number(m[10]) * 60 + Number(m[11])) * 60_000;
  else instant = zonedToUtc(wall, zone);
  if (m[7] && Number(m[7]) > 0) instant += 1000;
  if (instant <= now.getTime()) return { error: `Time "${at}" is in the past (now is ${now.toISOString()}); use now to run at once` };
  if (instant > LATEST_RUN_AT_MS) return { error: `Time "${at}" is past ${LATEST_RUN_AT} (UTC), the latest time a one-time schedule can run` };
  return { runAt: new Date(instant) };
}
