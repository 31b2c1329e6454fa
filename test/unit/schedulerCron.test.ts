import { cronZone, timezoneError } from '../../lib/scheduler/cron';
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
