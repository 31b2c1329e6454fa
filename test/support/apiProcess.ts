/**
 * `armada api` as a process of its own, for tests that put a fault between it and its PostgreSQL or Temporal (a
 * PostgreSQL of the test's own, test/support/ownPostgres.ts; a TCP proxy, test/support/tcpProxy.ts).
 */
import type { ChildProcess } from 'node:child_process';
import type { ServiceName } from '../../api/services';
import { spawnArmada } from './armadaProcess';
import { env, TEST_API_KEY } from './harness';

const { freePort, whilePortTaken } = require('./ports') as { freePort(): Promise<number>; whilePortTaken<T>(start: (tries: number) => Promise<T>): Promise<T> };

const ALL_SERVICES: ServiceName[] = ['task', 'scheduler', 'agents', 'traces'];
const PORT_VARIABLES: Record<ServiceName, string> = {
  task: 'ARMADA_TASK_PORT',
  scheduler: 'ARMADA_SCHEDULER_PORT',
  agents: 'ARMADA_AGENTS_PORT',
  traces: 'ARMADA_TRACES_PORT',
};

export interface ApiProcessOptions {
  home: string;
  databaseUrl: string;
  /** default: the run's Temporal dev server */
  temporalAddress?: string;
  /** the services it runs (one `--service` each); default: all four */
  services?: ServiceName[];
  /** ARMADA_CONFIG; default: none */
  configPath?: string;
  /** more variables (ARMADA_TASK_QUEUE, PGAPPNAME, …) */
  env?: NodeJS.ProcessEnv;
}

export interface ApiProcess {
  child: ChildProcess;
  /** where `service` listens, `http://127.0.0.1:<port>` (it must be one it runs) */
  base(service: ServiceName): string;
  /** the last 20,000 characters of its stdout and stderr since it listened */
  output(): string;
  /** SIGINT, then SIGKILL if it has not exited 60 s later (a socket left hanging can keep a stopped process alive) */
  stop(): Promise<void>;
}

/**
 * Spawns `armada api` on free ports with the test API key and warn-level JSON logs (no second scheduler listener) and
 * resolves once it listens.
 */
export function spawnApi(opts: ApiProcessOptions): Promise<ApiProcess> {
  // a port freePort found free can be taken by another file's server before this one binds it: new ports, twice more
  return whilePortTaken(() => spawnApiOnce(opts));
}

async function spawnApiOnce(opts: ApiProcessOptions): Promise<ApiProcess> {
  const services = opts.services ?? ALL_SERVICES;
  const ports: Partial<Record<ServiceName, number>> = {};
  for (const s of services) ports[s] = await freePort();
  const started = await spawnArmada(
    ['api', ...(opts.services ?? []).flatMap((s) => ['--service', s])],
    'listening',
    {
      ...process.env,
      ARMADA_HOME: opts.home,
      ARMADA_CONFIG: opts.configPath ?? '',
      DATABASE_URL: opts.databaseUrl,
      TEMPORAL_ADDRESS: opts.temporalAddress ?? env('ARMADA_TEST_TEMPORAL_ADDRESS'),
      ARMADA_API_KEY: TEST_API_KEY,
      ...Object.fromEntries(services.map((s) => [PORT_VARIABLES[s], String(ports[s])])),
      ARMADA_SCHEDULER_ALT_PORT: '',
      ARMADA_LOG_LEVEL: 'warn',
      ARMADA_LOG_FORMAT: 'json',
      ...opts.env,
    },
    180_000,
  );
  const child = started.child;
  let output = '';
  const keep = (d: Buffer) => (output = (output + d.toString()).slice(-20_000));
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  return {
    child,
    base(service) {
      if (ports[service] === undefined) throw new Error(`armada api runs ${services.join(', ')}, not ${service}`);
      return `http://127.0.0.1:${ports[service]}`;
    },
    output: () => output,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGINT');
      const killer = setTimeout(() => child.kill('SIGKILL'), 60_000);
      await exited;
      clearTimeout(killer);
    },
  };
}
