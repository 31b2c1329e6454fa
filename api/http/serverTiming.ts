/**
 * The Server-Timing response header (W3C Server Timing): where a request's time went, per part, in milliseconds.
 * The attempt start endpoints send `db`, `temporal` and `total` (docs/attempts.md, "Starting an attempt").
 */
export function serverTiming(parts: Record<string, number>): string {
  return Object.entries(parts)
    .map(([name, ms]) => `${name};dur=${ms.toFixed(2)}`)
    .join(', ');
}
