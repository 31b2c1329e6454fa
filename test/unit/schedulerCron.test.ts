import { cronZone, neverFiresError, timezoneError } from '../../lib/scheduler/cron';
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
