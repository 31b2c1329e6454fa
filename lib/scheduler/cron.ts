/**
 * What Armada itself reads in a schedule string: only the zone. Whether a cron string is valid is Temporal's call
 * (every form it accepts: 5 to 7 fields, `@every 1d`, `CRON_TZ=` prefixes, `#` comments); the schedule routes map
 * its rejection to a 400 with Temporal's own words (specRejection in temporalSchedules.ts).
 */

/** The zone a `CRON_TZ=<zone> …` (or `TZ=<zone> …`) prefix names, if the string has one. */
export function cronZone(expr: string): string | undefined {
  return /^\s*(?:CRON_)?TZ=(\S+)\s/.exec(expr)?.[1];
}

/** Returns null for an IANA zone name the runtime knows (e.g. Asia/Kolkata, UTC), else the reason. */
export function timezoneError(zone: string): string | null {
  if (!/^[A-Za-z][A-Za-z0-9_+-]*(\/[A-Za-z0-9_+-]+)*$/.test(zone) || zone.length > 64) return `Unknown time zone "${zone}": use an IANA name such as UTC or Europe/Paris`;
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone });
    return null;
  } catch {
    return `Unknown time zone "${zone}": use an IANA name such as UTC or Europe/Paris`;
  }
}
