/**
 * The one line `armada start` prints when the Temporal dev server exits before it answers, from its last output: what
 * went wrong and what to do, like postmasterFailure for PostgreSQL. A busy port and a damaged SQLite file used to be
 * quoted raw (`bind: address already in use`, `database disk image is malformed`) with no variable or advice.
 */
export interface DevServerPlace {
  dbFile: string;
  ip: string;
  port: number;
  uiPort: number | null;
}

/** The line for a dev server that `how` (e.g. "exited (code 1, signal null)") with `output` as its last stderr. */
export function devServerFailure(how: string, output: string, where: DevServerPlace): string {
  const busy = /(?:listen tcp|bind)[^\n]*?:(\d+): bind: address already in use/.exec(output);
  if (busy || /address already in use/.test(output)) {
    const port = busy ? Number(busy[1]) : where.port;
    const variable = port === where.uiPort ? 'ARMADA_TEMPORAL_UI_PORT' : 'ARMADA_TEMPORAL_PORT';
    return `temporal dev server did not start: port ${port} on ${where.ip} is in use: stop what listens there, or set ${variable} to a free port`;
  }
  if (/database disk image is malformed|file is not a database|SQLITE_CORRUPT|SQLITE_NOTADB/i.test(output)) {
    return `temporal dev server did not start: its SQLite file ${where.dbFile} is damaged (${sqliteCause(output)}): move it away (mv ${where.dbFile} ${where.dbFile}.damaged, with its -wal and -shm files) and start again; Armada's data in PostgreSQL is kept, what only Temporal held is lost (running attempts and workflow runs, their timers, the scheduler's Temporal Schedules)`;
  }
  if (/no such table/i.test(output)) {
    return `temporal dev server did not start: its SQLite file ${where.dbFile} lacks tables (${/no such table: \w+/i.exec(output)?.[0] ?? 'no such table'}: a first start cut short before this version marked first starts?): move it away (mv ${where.dbFile} ${where.dbFile}.incomplete, with its -wal and -shm files) and start again`;
  }
  const lines = output.split('\n').map((l) => l.trim()).filter(Boolean);
  return `temporal dev server ${how}: ${lines.slice(-3).join(' | ').slice(-2000)}`;
}

function sqliteCause(output: string): string {
  return /database disk image is malformed|file is not a database/i.exec(output)?.[0] ?? 'SQLite reports it corrupt';
}
