/**
 * A command's result as one JSON line in the log stream's shape (`level`, `time`, `event`, its fields, `msg`), for
 * machines reading the same stream as the JSON log lines: `armada start`'s ready/stopped, `armada migrate`'s migrated.
 */
export function eventLine(event: string, msg: string, fields: Record<string, unknown>): string {
  return `${JSON.stringify({ level: 30, time: Date.now(), event, ...fields, msg })}\n`;
}
