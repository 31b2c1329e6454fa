/**
 * The embedded PostgreSQL's data directory ($ARMADA_HOME/pg) from nothing to initialised, surviving a crash on the way.
 * initdb writes PG_VERSION among its first files, so its presence says nothing about initdb having finished: a start
 * killed during initdb (power loss, a cgroup kill) left a directory every later start failed on. A mark beside the
 * directory, made durable before initdb starts and removed once it succeeded, tells a half-made directory (emptied and
 * made again) from a real cluster (never emptied). Not initdb into a sibling directory renamed into place: the data
 * directory may be a mount point (a volume), which no rename can replace.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Logger } from '../logger';

/** Files every initialised data directory has; initdb writes them after PG_VERSION. */
const COMPLETE_CLUSTER_FILES = ['global/pg_control', 'global/pg_filenode.map', 'postgresql.conf'];

/** The data directory is there but unusable, and not one armada left half-made (one line: which and what to do). */
export class DataDirIncomplete extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DataDirIncomplete';
  }
}

/** `<dataDir>.initdb-incomplete`: present from just before initdb starts until it has succeeded. */
export function initMarkPath(dataDir: string): string {
  return `${dataDir}.initdb-incomplete`;
}

/** Writes or removes a file so that a power loss right after cannot undo it (the file and its directory synced). */
function durably(change: () => void, file: string): void {
  change();
  const dir = fs.openSync(path.dirname(file), 'r');
  try {
    fs.fsyncSync(dir);
  } finally {
    fs.closeSync(dir);
  }
}

/**
 * Removes what `dir` holds, keeping `dir` itself: it may be a mount point (a volume or a tmpfs mounted at
 * $ARMADA_HOME/pg), which cannot be removed (EBUSY) — that used to stop `armada start` on its first run.
 */
function emptyDirectory(dir: string): void {
  let names: string[];
  try {
    names = fs.readdirSync(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw err;
  }
  for (const name of names) fs.rmSync(path.join(dir, name), { recursive: true, force: true });
}

/**
 * Makes `dataDir` an initialised cluster with `initialise` (initdb) unless it is one: a directory armada left
 * half-made is emptied first; one that is incomplete otherwise is refused (DataDirIncomplete), never emptied.
 */
export async function ensureDataDirInitialised(dataDir: string, initialise: () => Promise<void>, log: Logger): Promise<void> {
  const mark = initMarkPath(dataDir);
  const halfMade = fs.existsSync(mark);
  if (!halfMade && fs.existsSync(path.join(dataDir, 'PG_VERSION'))) {
    const missing = COMPLETE_CLUSTER_FILES.filter((f) => !fs.existsSync(path.join(dataDir, f)));
    if (missing.length) {
      throw new DataDirIncomplete(
        `${dataDir} is not a complete PostgreSQL data directory (${missing.join(', ')} missing; an initialisation cut short?): if it holds no data you need, remove it (rm -rf ${dataDir}) and start again; else move it away and restore your backup there, or set DATABASE_URL`,
      );
    }
    return;
  }
  if (halfMade) log.warn({ dataDir }, 'an earlier initialisation of embedded postgres was cut short; initialising again');
  fs.mkdirSync(path.dirname(dataDir), { recursive: true });
  durably(() => fs.writeFileSync(mark, 'initdb of the directory beside this file has not finished yet\n', { flush: true }), mark);
  emptyDirectory(dataDir); // a half-initialised dir from a crash
  log.info({ dataDir }, 'initialising embedded postgres');
  await initialise();
  durably(() => fs.rmSync(mark), mark);
}
