import { ACCEPTED_SCHEDULES, cronZone, MIN_INTERVAL_MS, neverFiresError, quartzDayError, SCHEDULE_EXPRESSION_PATTERN, scheduleExpressionError, timezoneError } from '../../lib/scheduler/cron';
import { humanDuration } from '../../lib/scheduler/settings';

describe('schedule zones', () => {
  test('a CRON_TZ= or TZ= prefix names the zone; nothing else is read from a cron string', () => {
    expect(cronZone('CRON_TZ=Asia/Tokyo 0 9 * * *')).toBe('Asia/Tokyo');
    expect(cronZone('TZ=America/New_York 0 0 9 * * *')).toBe('America/New_York');
    for (const c of ['0 9 * * *', '@every 1d', '0 9 * * * # CRON_TZ=Asia/Tokyo', 'CRON_TZ=Asia/Tokyo']) expect(cronZone(c)).toBeUndefined();
  });

  test('zones', () => {
    expect(timezoneError('Asia/Kolkata')).toBeNull();
    expect(timezoneError('UTC')).toBeNull();
    expect(timezoneError('America/Argentina/Buenos_Aires')).toBeNull();
    for (const z of ['Mars/Olympus', '+05:30', 'Asia/', '../etc/passwd']) expect(timezoneError(z)).toBe(`Unknown time zone "${z}": use an IANA name such as UTC or Europe/Paris`);
    // names are case-sensitive (Temporal's are), also those the runtime knows under another name (aliases)
    expect(timezoneError('europe/paris')).toBe('Unknown time zone "europe/paris": use an IANA name such as UTC or Europe/Paris (names are case-sensitive: "Europe/Paris")');
    for (const z of ['europe/kyiv', 'asia/kathmandu', 'est5edt', 'gmt0', 'Europe/kyiv', 'uS/Pacific']) {
      expect(timezoneError(z)).toBe(`Unknown time zone "${z}": use an IANA name such as UTC or Europe/Paris (names are case-sensitive)`);
    }
    for (const z of ['Europe/Kyiv', 'Asia/Kathmandu', 'EST5EDT', 'GMT0', 'Etc/GMT-14', 'America/Port-au-Prince', 'Africa/Dar_es_Salaam']) expect(timezoneError(z)).toBeNull();
  });

  test('human durations', () => {
    expect(humanDuration(850)).toBe('850ms');
    expect(humanDuration(2345)).toBe('2.3s');
    expect(humanDuration(245_000)).toBe('4m 05s');
    expect(humanDuration(3_720_000)).toBe('1h 02m');
    expect(humanDuration(null)).toBeNull();
    // at the bounds the unit follows the rounded value
    expect([humanDuration(999.4), humanDuration(999.7), humanDuration(59_940), humanDuration(59_960)]).toEqual(['999ms', '1.0s', '59.9s', '1m 00s']);
  });
});

describe('cron strings that never fire', () => {
  const now = new Date('2026-11-29T12:00:00Z');
  test('a day of the month none of its months has is said as such, whatever the day of the week (Temporal needs both)', () => {
    expect(neverFiresError('0 0 30 2 *', 'UTC', now)).toBe('none of its months (February) has a day 30');
    expect(neverFiresError('0 0 30 2 MON', 'UTC', now)).toBe('none of its months (February) has a day 30');
    expect(neverFiresError('CRON_TZ=UTC 0 0 30 FEB * # leap', 'UTC', now)).toBe('none of its months (February) has a day 30');
    expect(neverFiresError('0 0 31 4,6,9,11 *', 'Asia/Tokyo', now)).toBe('none of its months (April, June, September, November) has a day 31');
    expect(neverFiresError('0 0 31 apr,june,sept,nov FRI', 'UTC', now)).toBe('none of its months (April, June, September, November) has a day 31');
    expect(neverFiresError('*/5 * 30-31 2 *', 'UTC', now)).toBe('none of its months (February) has a day 30 or later');
    expect(neverFiresError('0 0 0 31 2 * *', 'UTC', now)).toBe('none of its months (February) has a day 31'); // 7 fields: seconds first
  });
  test('times a daylight-saving change skips on every day the string names: said with the zone and the first such day', () => {
    // the last Sunday of March in Berlin: 02:00 CET becomes 03:00 CEST; the second Sunday of March in New York
    expect(neverFiresError('30 2 25-31 3 SUN', 'Europe/Berlin', now)).toBe(
      'in Europe/Berlin every day it names is one whose daylight-saving change skips its times (on 2027-03-28, the first, the clocks skip 1h)',
    );
    expect(neverFiresError('CRON_TZ=Europe/Berlin * 2 25-31 mar 0,7', 'Europe/Berlin', now)).toBe(
      'in Europe/Berlin every day it names is one whose daylight-saving change skips its times (on 2027-03-28, the first, the clocks skip 1h)',
    );
    expect(neverFiresError('0,59 2 8-14 3 SUN', 'America/New_York', now)).toBe(
      'in America/New_York every day it names is one whose daylight-saving change skips its times (on 2027-03-14, the first, the clocks skip 1h)',
    );
    // the same strings fire where the clocks do not skip those times (or skip another hour)
    for (const zone of ['UTC', 'Asia/Tokyo', 'America/New_York', 'Australia/Sydney']) expect([zone, neverFiresError('30 2 25-31 3 SUN', zone, now)]).toEqual([zone, null]);
    // a gap of 30 minutes (Lord Howe Island, 02:00 → 02:30): Temporal's calendar runs 02:15 at 02:45 that day
    expect(neverFiresError('15 2 1-7 10 SUN', 'Australia/Lord_Howe', now)).toBeNull();
    // a time the autumn change repeats, and one it skips on one day of many
    expect(neverFiresError('30 1 1-7 11 SUN', 'America/New_York', now)).toBeNull();
    expect(neverFiresError('30 2 * 3 SUN', 'Europe/Berlin', now)).toBeNull();
  });
  test('days of the month and of the week that never meet up to 2100, and years all past (older strings)', () => {
    // 29 February is a Monday in 2044, and on no day after 2072 up to 2100 (2100 is no leap year)
    expect(neverFiresError('0 0 29 2 MON', 'UTC', now)).toBeNull();
    expect(neverFiresError('0 0 29 2 MON', 'UTC', new Date('2073-01-01T00:00:00Z'))).toBe(
      "no date from now to the end of 2100 (Temporal's last calendar year) matches both its days of the month (29) and of the week (MON)",
    );
    expect(neverFiresError('0 9 * * * 2020', 'UTC', now)).toBe('its years (2020) are all past');
    expect(neverFiresError('0 0 9 * * * 2020-2025', 'UTC', now)).toBe('its years (2020-2025) are all past');
    // 2026 on 1 January 2027 at 05:00 UTC: still 2026 at UTC-12 until 12:00 UTC, past in UTC
    expect(neverFiresError('0 20 * * * 2026', 'Etc/GMT+12', new Date('2027-01-01T05:00:00Z'))).toBeNull();
    expect(neverFiresError('0 20 * * * 2026', 'UTC', new Date('2027-01-01T05:00:00Z'))).toBe("no time it names is still to come (up to the end of 2100, Temporal's last calendar year)");
  });
  test('what can fire, and forms this reading leaves to Temporal, pass', () => {
    for (const c of ['0 0 29 2 *', '0 0 31 2-4 *', '0 0 31 */2 *', '0 0 1/10 2 *', '0 0 31 12 7', '0 9 * * * 2030', '@every 1d', '@yearly', '@weekly', '0 0 L 2 *', '0 9 * * * 2150', '0 9 * * *', '61 * 30 2 *', '0 0 30 2/x *']) {
      expect([c, neverFiresError(c, 'Europe/Berlin', now)]).toEqual([c, null]);
    }
  });
});

describe('the accepted schedule expressions (docs/scheduler.md#schedule-expressions)', () => {
  const ACCEPTED = [
    '* * * * *', '0 9 * * 7', '*/5 0-6,22 1 jan-mar MON-FRI', '0 0 1 */2 *', '0  9 * * *', '0 9 * * * # mornings', '0 9 * * * #',
    '@yearly', '@annually', '@monthly', '@weekly', '@daily', '@midnight', '@hourly', '@hourly # top of the hour',
    '@every 1s', '@every 1000ms', '@every 1000000us', '@every 1.5m', '@every 5m', '@every 1h30m', '@every 1d', '@every 10m/2m', '@every 1m/30000ms # x',
    '@every 2562047h', 'CRON_TZ=Asia/Tokyo 0 9 * * *', 'TZ=America/New_York @daily', 'CRON_TZ=Etc/GMT-14 */5 * * * *',
  ];
  const REFUSED: [string, string][] = [
    ['* * * * * * *', 'it has 7 fields: a first field of seconds and a last of years are not accepted'],
    ['0-59 * * * * * *', 'it has 7 fields: a first field of seconds and a last of years are not accepted'],
    ['*/1 * * * * * 2030', 'it has 7 fields: a first field of seconds and a last of years are not accepted'],
    ['30 0 9 * * *', 'it has 6 fields: a 6th field would be a year, which is not accepted'],
    ['0 9 * * * 2030 # x', 'it has 6 fields: a 6th field would be a year, which is not accepted'],
    ['* * *', 'it has 3 fields'],
    ['@every 1ns', 'its interval 1ns is shorter than 1s, the shortest interval between two runs'],
    ['@every 999ms', 'its interval 999ms is shorter than 1s, the shortest interval between two runs'],
    ['@every 0.5s', 'its interval 0.5s is shorter than 1s, the shortest interval between two runs'],
    ['@every 0s', 'its interval 0s is shorter than 1s, the shortest interval between two runs'],
    ['@every 1.5s', 'its interval 1.5s is not a whole number of seconds (Temporal counts whole seconds: it would run every 1s)'],
    ['@every 2500ms', 'its interval 2500ms is not a whole number of seconds (Temporal counts whole seconds: it would run every 2s)'],
    ['@every 10s/0.5s', 'its offset 0.5s is not a whole number of seconds (Temporal counts whole seconds: it would use 0s)'],
    ['@every 2562048h', "its interval 2562048h is longer than Temporal's longest duration (2562047h, about 292 years)"],
    ['@every 99999999999999999999d', "its interval 99999999999999999999d is longer than Temporal's longest duration (2562047h, about 292 years)"],
    ['CRON_TZ=Etc/GMT-14 @every 2s', 'a CRON_TZ= zone does not apply to "@every" (Temporal drops it): an interval counts from the Unix epoch, the same instants in every zone'],
    ['TZ=Asia/Tokyo @every 1d', 'a CRON_TZ= zone does not apply to "@every" (Temporal drops it): an interval counts from the Unix epoch, the same instants in every zone'],
    ['@every 5', '"@every" must be followed by one space and a duration with its unit, such as 30s, 5m or 1h30m'],
    ['@every5m', '"@every" must be followed by one space and a duration with its unit, such as 30s, 5m or 1h30m'],
    ['@every  5m', '"@every" must be followed by one space and a duration with its unit, such as 30s, 5m or 1h30m'],
    ['@every -5m', '"@every" must be followed by one space and a duration with its unit, such as 30s, 5m or 1h30m'],
    ['@DAILY', '"@DAILY" is not a macro'],
    ['@reboot', '"@reboot" is not a macro'],
    ['0\t9 * * *', 'it holds a tab (U+0009): only spaces separate its parts'],
    ['0 9 * * *\n', 'it holds a line feed (U+000A): only spaces separate its parts'],
    ['0 9 * * *\r\n* * * * *', 'it holds a carriage return (U+000D): only spaces separate its parts'],
    ['0\u00a09 * * *', 'it holds a no-break space (U+00A0): only spaces separate its parts'],
    ['0\u20039 * * *', 'it holds U+2003: only spaces separate its parts'],
    [' 0 9 * * *', 'it starts or ends with a space'],
    ['0 9 * * * ', 'it starts or ends with a space'],
    ['0 9 * * MÖN', 'it holds U+00D6, which no cron field holds'],
    ['0 9 * * ?', '"?" is not a cron field (digits, names such as MON or JAN, *, ranges a-b, steps /n and lists a,b)'],
    ['0 9 * * *#x', '"*#x" is not a cron field (digits, names such as MON or JAN, *, ranges a-b, steps /n and lists a,b)'],
    ['0 9 * * * # bell\u0007', 'its comment holds U+0007'],
    ['CRON_TZ= 0 9 * * *', 'its zone prefix must be CRON_TZ=<zone> followed by a space and the schedule'],
  ];

  test('accepted: 5 fields, the macros, @every of at least 1s, with a zone prefix or a comment', () => {
    for (const expr of ACCEPTED) expect([expr, scheduleExpressionError(expr)]).toEqual([expr, null]);
  });

  test('refused with what is wrong, then what is accepted: 6 and 7 fields, short intervals, odd white space', () => {
    for (const [expr, why] of REFUSED) expect([expr, scheduleExpressionError(expr)]).toEqual([expr, `${why}; ${ACCEPTED_SCHEDULES}`]);
    // the nth weekday keeps its own words: "#" would start a comment there
    expect(scheduleExpressionError('0 9 * * MON#2')).toBe('"MON#2" is not supported (the nth weekday of a month); "#" starts a comment here, so it would run on every MON');
    expect(scheduleExpressionError('0 9 * * MON#2 # second Monday')).toBe('"MON#2" is not supported (the nth weekday of a month); "#" starts a comment here, so it would run on every MON');
    expect(scheduleExpressionError('0 9 * * MON # ticket 1#2')).toBeNull(); // a comment's text
    expect(MIN_INTERVAL_MS).toBe(1000);
  });

  test('the schemas\' pattern takes exactly the forms the check takes (the length and whole seconds of @every aside)', () => {
    const pattern = new RegExp(SCHEDULE_EXPRESSION_PATTERN);
    for (const expr of ACCEPTED) expect([expr, pattern.test(expr)]).toEqual([expr, true]);
    const floorOnly = new Set(['@every 1ns', '@every 999ms', '@every 0.5s', '@every 0s', '@every 1.5s', '@every 2500ms', '@every 10s/0.5s', '@every 2562048h', '@every 99999999999999999999d']);
    for (const [expr] of REFUSED) expect([expr, pattern.test(expr)]).toEqual([expr, floorOnly.has(expr)]);
    expect(pattern.test('0 9 * * MON#2')).toBe(false);
  });

  test("Quartz's L and W, which Temporal's cron lacks, and steps Go would parse are refused in words that name them", () => {
    const lastDay = '"L" (the last day of the month) is not supported: the day of the month takes numbers 1-31 (with *, ranges, steps and lists)';
    const nearest = (t: string) => `"${t}" (the weekday nearest a day of the month) is not supported: the day of the month takes numbers 1-31 (with *, ranges, steps and lists)`;
    const lastWeekday = (t: string) => `"${t}" (the last given weekday of a month) is not supported: the day of the week takes 0-7 (0 and 7 are Sunday) or names such as MON (with *, ranges, steps and lists)`;
    expect(scheduleExpressionError('0 0 L * *')).toBe(lastDay);
    expect(scheduleExpressionError('CRON_TZ=UTC 0 0 1,L * * # month ends')).toBe(lastDay);
    expect(scheduleExpressionError('0 0 15W * *')).toBe(nearest('15W'));
    expect(scheduleExpressionError('0 0 LW * *')).toBe(nearest('LW'));
    expect(scheduleExpressionError('0 0 * * 5L')).toBe(lastWeekday('5L'));
    // a step Temporal would read with Go's Atoi, in its words without the field
    expect(scheduleExpressionError('*/x * * * *')).toBe('the step in "*/x" (the minute) is not a whole number: a step after "/" is a whole number of at least 1');
    expect(scheduleExpressionError('0 0 1,*/* * *')).toBe('the step in "*/*" (the day of the month) is not a whole number: a step after "/" is a whole number of at least 1');
    expect(scheduleExpressionError('0 */99999999999999999999 * * *')).toBe('the step in "*/99999999999999999999" (the hour) is too large: a step after "/" is a whole number of at least 1');
    for (const c of ['*/0 * * * *', '*/-1 * * * *', '1/2/3 * * * *', '*/9223372036854775807 * * * *', '*/60 * * * *']) expect([c, scheduleExpressionError(c)]).toEqual([c, null]); // Temporal's
    // names are no Quartz token: JUL, WED, SAT pass
    for (const c of ['0 0 * jul wed', '0 0 1 * SAT-SUN', '0 0 * * WE']) expect([c, quartzDayError(c)]).toEqual([c, null]);
  });
});
