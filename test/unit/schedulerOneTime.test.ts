import { AT_PATTERN, parseRunAt } from '../../lib/scheduler/oneTime';

const NOW = new Date('2026-01-01T00:00:00Z');
const at = (text: string, zone = 'UTC') => {
  const r = parseRunAt(text, zone, NOW);
  return 'runAt' in r ? (r.runAt === 'now' ? 'now' : r.runAt.toISOString()) : r.error;
};

describe('one-time schedule times', () => {
  test('now, an instant with Z or an offset, a wall-clock time in the zone', () => {
    expect(at('now')).toBe('now');
    expect(at('2030-06-01T09:30:00Z', 'Asia/Kolkata')).toBe('2030-06-01T09:30:00.000Z');
    expect(at('2030-06-01T09:30+05:30', 'Europe/Paris')).toBe('2030-06-01T04:00:00.000Z');
    expect(at('2030-06-01T09:30-04:00')).toBe('2030-06-01T13:30:00.000Z');
    expect(at('2030-06-01T09:30', 'Asia/Kolkata')).toBe('2030-06-01T04:00:00.000Z');
    expect(at('2030-06-01 09:30:15', 'America/New_York')).toBe('2030-06-01T13:30:15.000Z'); // EDT, UTC-4
    expect(at('2030-01-15T09:30', 'America/New_York')).toBe('2030-01-15T14:30:00.000Z'); // EST, UTC-5
  });

  test('an offset past ±23:59 is refused, naming it; the largest real ones are read', () => {
    for (const bad of ['+99:99', '-48:00', '+25:00', '+05:60']) expect(at(`2027-06-01T10:00:00${bad}`)).toBe(`Invalid time "2027-06-01T10:00:00${bad}": the UTC offset ${bad} is out of range (at most ±23:59)`);
    expect(at('2027-06-01T10:00:00+14:00')).toBe('2027-05-31T20:00:00.000Z');
    expect(at('2027-06-01T10:00:00-12:00')).toBe('2027-06-01T22:00:00.000Z');
    expect(at('2027-06-01T10:00:00+23:59')).toBe('2027-05-31T10:01:00.000Z');
  });

  test('daylight saving: a skipped time moves forward by the gap, a repeated one is the later', () => {
    // Europe/Paris springs forward on 2030-03-31 at 02:00 (to 03:00) and falls back on 2030-10-27 at 03:00 (to 02:00)
    expect(at('2030-03-31T02:30', 'Europe/Paris')).toBe('2030-03-31T01:30:00.000Z'); // 03:30 CEST
    expect(at('2030-10-27T02:30', 'Europe/Paris')).toBe('2030-10-27T01:30:00.000Z'); // 02:30 CET, the second one
    // zones west of UTC (New York springs forward 2027-03-14 02:00, falls back 2027-11-07 02:00; Los Angeles alike)
    expect(at('2027-03-14T02:30', 'America/New_York')).toBe('2027-03-14T07:30:00.000Z'); // 03:30 EDT
    expect(at('2027-11-07T01:30', 'America/New_York')).toBe('2027-11-07T06:30:00.000Z'); // 01:30 EST, the second one
    expect(at('2027-03-14T02:30', 'America/Los_Angeles')).toBe('2027-03-14T10:30:00.000Z');
    expect(at('2027-11-07T01:30', 'America/Los_Angeles')).toBe('2027-11-07T09:30:00.000Z');
    // the minutes next to each change, and half-hour shifts (Lord Howe: +10:30 / +11)
    expect(at('2027-03-14T01:59', 'America/New_York')).toBe('2027-03-14T06:59:00.000Z');
    expect(at('2027-03-14T03:00', 'America/New_York')).toBe('2027-03-14T07:00:00.000Z');
    expect(at('2027-11-07T00:59', 'America/New_York')).toBe('2027-11-07T04:59:00.000Z');
    expect(at('2027-11-07T02:00', 'America/New_York')).toBe('2027-11-07T07:00:00.000Z');
    expect(at('2027-10-03T02:15', 'Australia/Lord_Howe')).toBe('2027-10-02T15:45:00.000Z'); // in the gap: 02:45 +11
    expect(at('2027-04-04T01:45', 'Australia/Lord_Howe')).toBe('2027-04-03T15:15:00.000Z'); // repeated: the later, +10:30
  });

  test('fractions of a second round up to the next whole second', () => {
    expect(at('2030-06-01T09:30:00.250Z')).toBe('2030-06-01T09:30:01.000Z');
    expect(at('2030-06-01T09:30:00.000Z')).toBe('2030-06-01T09:30:00.000Z');
  });

  test('impossible, malformed and past times are refused with the reason', () => {
    expect(at('2030-02-29T10:00')).toBe('Invalid time "2030-02-29T10:00": not a date and time of the calendar');
    expect(at('2030-13-01T10:00')).toBe('Invalid time "2030-13-01T10:00": not a date and time of the calendar');
    expect(at('2030-01-01T24:00')).toBe('Invalid time "2030-01-01T24:00": not a date and time of the calendar');
    expect(at('tomorrow')).toMatch(/^Invalid time "tomorrow": use now or an ISO 8601 date-time/);
    expect(at('2025-12-31T23:59:59Z')).toBe('Time "2025-12-31T23:59:59Z" is in the past (now is 2026-01-01T00:00:00.000Z); use now to run at once');
    expect(at('2026-01-01T05:29', 'Asia/Kolkata')).toMatch(/is in the past/); // 23:59 UTC the day before
  });

  test('the schema pattern accepts what the parser reads and nothing else', () => {
    const re = new RegExp(AT_PATTERN);
    for (const ok of ['now', '2030-06-01T09:30', '2030-06-01 09:30:15', '2030-06-01T09:30:00.123456Z', '2030-06-01T09:30+05:30']) expect(re.test(ok)).toBe(true);
    for (const bad of ['NOW', 'tomorrow', '2030-06-01', '2030-06-01T9:30', '2030-06-01T09:30:00+0530x', '']) expect(re.test(bad)).toBe(false);
  });
});
