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
