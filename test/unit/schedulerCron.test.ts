import { cronError, timezoneError } from '../../lib/scheduler/cron';
import { humanDuration } from '../../lib/scheduler/settings';

describe('cron and zone validation', () => {
  test.each(['* * * * *', '*/5 0-6,22 1 jan-mar MON-FRI', '0 9 * * 7', '@daily', '@HOURLY', '@every 1s', '@every 1h30m', '@every 10m/2m', '30 9 ? * *'])(
    '%s is accepted',
    (expr) => expect(cronError(expr)).toBeNull(),
  );
  test.each([
    ['', 'Invalid cron expression "": it is empty'],
    ['* * * *', 'Invalid cron expression "* * * *": expected 5 fields (minute hour day-of-month month day-of-week), got 4'],
    ['0 24 * * *', 'Invalid cron expression "0 24 * * *": hour field 24 is outside 0-23'],
    ['0 0 0 * *', 'Invalid cron expression "0 0 0 * *": day-of-month field 0 is outside 1-31'],
    ['0 0 * 13 *', 'Invalid cron expression "0 0 * 13 *": month field 13 is outside 1-12'],
    ['*/0 * * * *', 'Invalid cron expression "*/0 * * * *": minute field step "0" must be a positive integer'],
    ['5-1 * * * *', 'Invalid cron expression "5-1 * * * *": minute field range 5-1 is reversed'],
    ['1,,2 * * * *', 'Invalid cron expression "1,,2 * * * *": minute field has an empty list item'],
    ['@sometimes', 'Invalid cron expression "@sometimes": unknown shorthand (use @yearly, @monthly, @weekly, @daily, @hourly or @every <duration>)'],
    ['@every 5 minutes', 'Invalid cron expression "@every 5 minutes": @every needs a duration of at least 1s such as 30s, 5m or 1h30m'],
  ])('%j is rejected precisely', (expr, detail) => expect(cronError(expr)).toBe(detail));

  test('zones', () => {
    expect(timezoneError('Asia/Kolkata')).toBeNull();
    expect(timezoneError('UTC')).toBeNull();
    expect(timezoneError('America/Argentina/Buenos_Aires')).toBeNull();
    for (const z of ['Mars/Olympus', '+05:30', 'Asia/', '../etc/passwd']) expect(timezoneError(z)).toBe(`Unknown time zone "${z}": use an IANA name such as UTC or Europe/Paris`);
  });

  test('human durations', () => {
    expect(humanDuration(850)).toBe('850ms');
    expect(humanDuration(2345)).toBe('2.3s');
    expect(humanDuration(245_000)).toBe('4m 05s');
    expect(humanDuration(3_720_000)).toBe('1h 02m');
    expect(humanDuration(null)).toBeNull();
  });
});
