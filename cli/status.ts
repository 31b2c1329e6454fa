/**
 * `armada status`: what runs on this ARMADA_HOME. Reads the home (the embedded PostgreSQL's postmaster.pid, the
 * Temporal dev server's pid file beside temporal.db, the provisioned tools), probes every configured service's
 * /health and tells this home's services from another home's by the process listening on the port, asks Temporal
 * for the pollers of the worker queues, and sums the data directory. Changes nothing.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { configWarning, loadConfig, type ArmadaConfig } from '../lib/config';
import { localUrl } from '../lib/hostAddress';
import { resolveLogFormat } from '../lib/logger';
import { processAlive } from '../lib/process/procStat';
import { liveArmadaOwner } from '../lib/runtime/homeInUse';
import { portListener } from '../lib/runtime/portListener';
import { checkProvisioned } from '../lib/runtime/provisionTemporalCli';
import { findTemporalCli } from '../lib/runtime/temporalDevServer';
import { hostQueue } from '../lib/temporal/queues';
import { dirSize } from '../lib/fs/dirSize';

interface ServiceStatus {
  name: string;
  url: string;
  /** `other`: something answers on the port, but not an armada of this home (`owner` names it when it can) */
  state: 'up' | 'unhealthy' | 'down' | 'other';
  detail?: string;
  version?: string;
  owner?: { pid: number; home?: string };
}

interface ServerStatus {
  mode: 'embedded' | 'external';
  state: 'running' | 'stopped' | 'external';
  address?: string;
  pid?: number;
  version?: string;
}

export interface ArmadaStatus {
  home: string;
  running: boolean;
  armadaPid?: number;
  services: ServiceStatus[];
  postgres: ServerStatus;
  temporal: ServerStatus;
  workerQueues: { name: string; pollers: number | null }[];
  versions: Record<string, string>;
  dataDir: { path: string; bytes: number };
}

function alive(pid: number, mark: string): boolean {
  try {
    return processAlive(pid) && fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(mark);
  } catch {
    return false;
  }
}

async function probe(name: string, url: string): Promise<ServiceStatus> {
  try {
    const res = await fetch(`${url}/health`, { signal: AbortSignal.timeout(2000) });
    const body = (await res.json().catch(() => ({}))) as { status?: string; version?: string; error?: string };
    return { name, url, state: res.ok ? 'up' : 'unhealthy', detail: body.error ?? body.status, version: body.version };
  } catch {
    return { name, url, state: 'down' };
  }
}

function postgresStatus(config: ArmadaConfig): ServerStatus {
  if (config.databaseUrl) return { mode: 'external', state: 'external', address: 'DATABASE_URL' };
  const dataDir = path.join(config.home, 'pg');
  let version: string | undefined;
  try {
    version = fs.readFileSync(path.join(dataDir, 'PG_VERSION'), 'utf8').trim();
  } catch {
    /* never initialised */
  }
  try {
    const lines = fs.readFileSync(path.join(dataDir, 'postmaster.pid'), 'utf8').split('\n');
    const pid = Number(lines[0]);
    // postmaster.pid: pid, data dir, start time, port, socket dir, listen address, ...
    const listen = lines[5]?.trim().split(/[\s,]/)[0];
    const host = !listen || listen === '*' ? '127.0.0.1' : listen;
    if (alive(pid, 'postgres')) return { mode: 'embedded', state: 'running', pid, address: `${host}:${lines[3]?.trim()}`, version };
  } catch {
    /* not running */
  }
  return { mode: 'embedded', state: 'stopped', address: `127.0.0.1:${config.embedded.pgPort}`, version };
}

function temporalVersion(binary: string | undefined): string | undefined {
  if (!binary) return undefined;
  try {
    return execFileSync(binary, ['--version'], { encoding: 'utf8', timeout: 10_000, stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return undefined;
  }
}

/** The Temporal CLI start would use (never provisions): TEMPORAL_CLI_PATH, PATH, Python's scripts dir, the tools dir. */
function temporalBinary(config: ArmadaConfig): string | undefined {
  try {
    return findTemporalCli(config.temporal.cliPath);
  } catch {
    const provisioned = checkProvisioned(config.toolsDir);
    return provisioned.state === 'ok' ? provisioned.binary : undefined;
  }
}

function temporalStatus(config: ArmadaConfig): ServerStatus {
  if (config.temporal.address) return { mode: 'external', state: 'external', address: config.temporal.address };
  try {
    const pid = Number(fs.readFileSync(path.join(config.home, 'temporal.db.pid'), 'utf8').trim());
    if (alive(pid, 'start-dev')) {
      const args = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
      const arg = (flag: string) => args[args.indexOf(flag) + 1];
      const exe = fs.readlinkSync(`/proc/${pid}/exe`);
      return { mode: 'embedded', state: 'running', pid, address: `${arg('--ip')}:${arg('--port')}`, version: temporalVersion(exe) };
    }
  } catch {
    /* not running */
  }
  // where armada start would run it: on 127.0.0.1 whatever ARMADA_HOST says (cli/runtime.ts)
  return { mode: 'embedded', state: 'stopped', address: `127.0.0.1:${config.embedded.temporalPort}`, version: temporalVersion(temporalBinary(config)) };
}

async function queuePollers(address: string, namespace: string, names: string[]): Promise<{ name: string; pollers: number | null }[]> {
  let connection: Connection | undefined;
  try {
    connection = await Connection.connect({ address, connectTimeout: 2000 });
    const conn = connection;
    // a server that is up but does not answer must not hold `armada status`: the pollers are then unknown
    return await conn.withDeadline(Date.now() + 5000, () =>
      Promise.all(
        names.map(async (name) => {
          const res = await conn.workflowService.describeTaskQueue({ namespace, taskQueue: { name }, taskQueueType: 1 /* WORKFLOW */ });
          return { name, pollers: res.pollers?.length ?? 0 };
        }),
      ),
    );
  } catch {
    return names.map((name) => ({ name, pollers: null }));
  } finally {
    await connection?.close().catch(() => undefined);
  }
}

const ARMADA_COMMAND = /\barmada\b/;

/**
 * Which of the answering services belong to an armada of this home (the process listening on the port runs with
 * this ARMADA_HOME); the others are marked `other`. Returns the pid of this home's armada among them, if any.
 */
function claimServices(config: ArmadaConfig, services: (ServiceStatus & { port: number })[], knownArmada: number | undefined): number | undefined {
  let own: number | undefined;
  for (const s of services) {
    if (s.state === 'down') continue;
    const listener = portListener(s.port, knownArmada ? [knownArmada] : []);
    if (listener && listener.home === config.home && ARMADA_COMMAND.test(listener.command)) {
      own ??= listener.pid;
      continue;
    }
    s.state = 'other';
    if (listener) s.owner = { pid: listener.pid, home: listener.home };
  }
  return own;
}

export async function collectStatus(config: ArmadaConfig): Promise<ArmadaStatus> {
  const base = (port: number) => localUrl(config.host, port);
  const ports: [string, number | null][] = [
    ['task', config.ports.task],
    ['scheduler', config.ports.scheduler],
    ['scheduler-alt', config.ports.schedulerAlt],
    ['agents', config.ports.agents],
    ['traces', config.ports.traces],
  ];
  const postgres = postgresStatus(config);
  const temporal = temporalStatus(config);
  const probed = await Promise.all(ports.filter((p): p is [string, number] => p[1] !== null).map(async ([name, port]) => ({ ...(await probe(name, base(port))), port })));
  const shared = config.temporal.taskQueue;
  const workerQueues =
    temporal.state === 'stopped' ? [shared, hostQueue(shared)].map((name) => ({ name, pollers: null })) : await queuePollers(temporal.address as string, config.temporal.namespace, [shared, hostQueue(shared)]);
  // running is decided by this home's own processes: the armada that owns its embedded servers, or one of this home
  // serving a port; never by whatever answers on the configured ports (an armada of another home may)
  const owner = [postgres.pid, temporal.pid].map((pid) => (pid ? liveArmadaOwner(pid) : undefined)).find(Boolean);
  const serving = claimServices(config, probed, owner?.pid);
  const armadaPid = owner?.pid ?? serving;
  const services: ServiceStatus[] = probed.map(({ port: _port, ...s }) => s);
  const versions: Record<string, string> = { armada: config.version, node: process.version };
  if (postgres.version) versions.postgresql = postgres.version;
  if (temporal.version) versions.temporal = temporal.version.replace(/^temporal version /, '');
  return {
    home: config.home,
    running: armadaPid !== undefined,
    armadaPid,
    services,
    postgres,
    temporal,
    workerQueues,
    versions,
    dataDir: { path: config.home, bytes: dirSize(config.home, { files: 2_000_000 }) },
  };
}

function human(bytes: number): string {
  const units = ['B', 'KB', 'MB', 'GB', 'TB'];
  let n = bytes;
  let i = 0;
  while (n >= 1024 && i < units.length - 1) {
    n /= 1024;
    i++;
  }
  return `${i === 0 ? n : n.toFixed(1)} ${units[i]}`;
}

function serviceState(v: ServiceStatus): string {
  if (v.state === 'unhealthy' && v.detail) return `unhealthy (${v.detail})`;
  if (v.state !== 'other') return v.state;
  if (!v.owner) return 'answering, but not an armada of this home';
  return `answering for ${v.owner.home ? `another home, ${v.owner.home}` : 'another process'} (pid ${v.owner.pid})`;
}

export function formatStatus(s: ArmadaStatus): string {
  const server = (x: ServerStatus) =>
    x.mode === 'external' ? `external (${x.address})` : `embedded, ${x.address}, ${x.state}${x.pid ? ` (pid ${x.pid})` : ''}`;
  const lines = [
    `armada on ${s.home}: ${s.running ? `running${s.armadaPid ? ` (pid ${s.armadaPid})` : ''}` : 'stopped'}`,
    '  services',
    ...s.services.map((v) => `    ${v.name.padEnd(14)} ${v.url.padEnd(24)} ${serviceState(v)}`),
    `  postgres       ${server(s.postgres)}`,
    `  temporal       ${server(s.temporal)}`,
    `  worker queues  ${s.workerQueues.map((q) => `${q.name} (${q.pollers === null ? 'unknown' : `${q.pollers} poller${q.pollers === 1 ? '' : 's'}`})`).join(', ')}`,
    `  versions       ${Object.entries(s.versions)
      .map(([k, v]) => `${k} ${v}`)
      .join(', ')}`,
    `  data           ${s.dataDir.path} (${human(s.dataDir.bytes)})`,
  ];
  return `${lines.join('\n')}\n`;
}

/**
 * Prints the status as `armada migrate` prints its result: text on a terminal, the JSON object on a pipe or a file,
 * or with --json (ARMADA_LOG_FORMAT decides when set, as for the logs).
 */
export async function runStatus(opts: { json?: boolean }): Promise<number> {
  const config = loadConfig();
  const warning = configWarning(config);
  if (warning) process.stderr.write(`armada: warning: ${warning}\n`); // stdout keeps the status (JSON for machines)
  const status = await collectStatus(config);
  const json = opts.json || resolveLogFormat(config.logFormat, process.stdout.isTTY === true) === 'json';
  process.stdout.write(json ? `${JSON.stringify(status, null, 2)}\n` : formatStatus(status));
  return 0;
}
