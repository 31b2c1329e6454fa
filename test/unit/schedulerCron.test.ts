import { ACCEPTED_SCHEDULES, cronZone, MIN_INTERVAL_MS, neverFiresError, SCHEDULE_EXPRESSION_PATTERN, scheduleExpressionError, timezoneError } from '../../lib/scheduler/cron';
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
  test('a day of the month none of its months has, with the day of the week open, is said as such', () => {
    expect(neverFiresError('0 0 30 2 *', now)).toBe('none of its months (February) has a day 30');
    expect(neverFiresError('CRON_TZ=UTC 0 0 30 FEB ? # leap', now)).toBe('none of its months (February) has a day 30');
    expect(neverFiresError('0 0 31 4,6,9,11 *', now)).toBe('none of its months (April, June, September, November) has a day 31');
    expect(neverFiresError('*/5 * 30-31 2 *', now)).toBe('none of its months (February) has a day 30 or later');
    expect(neverFiresError('0 0 0 31 2 * *', now)).toBe('none of its months (February) has a day 31'); // 7 fields: seconds first
  });
  test('years that are all past', () => {
    expect(neverFiresError('0 9 * * * 2020', now)).toBe('its years (2020) are all past');
    expect(neverFiresError('0 0 9 * * * 2020-2025', now)).toBe('its years (2020-2025) are all past');
    // the current year somewhere on Earth is not past: 2026 on 1 January 2027 at 05:00 UTC is still 2026 at UTC-12
    expect(neverFiresError('0 9 * * * 2026', new Date('2027-01-01T05:00:00Z'))).toBeNull();
  });
  test('what can fire, and forms this reading leaves to Temporal, pass', () => {
    for (const c of ['0 0 29 2 *', '0 0 31 2-4 *', '0 0 30 2 MON', '0 0 31 */2 *', '0 0 1/10 2 *', '0 9 * * * 2030', '@every 1d', '@yearly', '0 0 L 2 *', '0 9 * * * 2150', '0 9 * * *']) {
      expect([c, neverFiresError(c, now)]).toEqual([c, null]);
    }
  });
});

describe('the accepted schedule expressions (docs/scheduler.md#schedule-expressions)', () => {
  const ACCEPTED = [
    '* * * * *', '0 9 * * 7', '*/5 0-6,22 1 jan-mar MON-FRI', '0 0 1 */2 *', '0  9 * * *', '0 9 * * * # mornings', '0 9 * * * #',
    '@yearly', '@annually', '@monthly', '@weekly', '@daily', '@midnight', '@hourly', '@hourly # top of the hour',
    '@every 1s', '@every 1.5s', '@every 1000ms', '@every 1000000us', '@every 5m', '@every 1h30m', '@every 1d', '@every 10m/2m',
    'CRON_TZ=Asia/Tokyo 0 9 * * *', 'TZ=America/New_York @daily', 'CRON_TZ=Etc/GMT-14 @every 2s',
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
    expect(MIN_INTERVAL_MS).toBe(1000);
  });

  test('the schemas\' pattern takes exactly the forms the check takes (the 1-second floor of @every aside)', () => {
    const pattern = new RegExp(SCHEDULE_EXPRESSION_PATTERN);
    for (const expr of ACCEPTED) expect([expr, pattern.test(expr)]).toEqual([expr, true]);
    const floorOnly = new Set(['@every 1ns', '@every 999ms', '@every 0.5s', '@every 0s']);
    for (const [expr] of REFUSED) expect([expr, pattern.test(expr)]).toEqual([expr, floorOnly.has(expr)]);
    expect(pattern.test('0 9 * * MON#2')).toBe(false);
  });
});
