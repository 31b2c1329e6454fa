/**
 * Test helpers on top of the run's real PostgreSQL and Temporal (test/support/globalSetup.js): a fresh database per
 * test file, a config in a throw-away ARMADA_HOME, a worker on a queue of the file's own, the services' apps.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Client, type Pool } from 'pg';
import type { FastifyInstance } from 'fastify';
import { buildService, serviceMetrics, type ServiceName } from '../../api/services';
import { loadConfig, type ArmadaConfig } from '../../lib/config';
import { createPool } from '../../lib/db/pool';
import { resolveKeys, type ResolvedKeys } from '../../lib/keys';
import { createLogger, type Logger } from '../../lib/logger';
import { createMetrics } from '../../lib/metrics';
import type { DependencyState } from '../../lib/runtime/dependencies';
import { createTemporalHandle, type TemporalHandle } from '../../lib/temporal/client';
import { startWorkers, type RunningWorkers, type WorkerOptions } from '../../workers/createWorker';
import { Runtime } from '@temporalio/worker';
import { sdkLogger } from '../../lib/temporal/sdkLogger';
import type { Faults } from '../../lib/faults';

export const logger = createLogger(process.env.ARMADA_TEST_LOG_LEVEL ?? 'silent');

let runtimeInstalled = false;
/**
 * Installs this test file's Temporal runtime (the SDK's native core: threads of its own) on first use, before the
 * file's first worker, native connection or replay. A test file that never uses one then creates no runtime. Each
 * file gets fresh modules, so it gets its own `Runtime` singleton in the shared jest worker process, and an
 * installed runtime that nothing ever registers with is never shut down. Installed eagerly at import, every file
 * left one behind: up to 54 core threads in one jest worker by the end of a run (native state that two CI runs'
 * SIGSEGV in a jest worker may have come from; not proven). The SDK shuts the runtime down when its last worker or
 * connection closes, and creates it again with these options on the next use.
 */
export function ensureTemporalRuntime(): void {
  if (runtimeInstalled) return;
  Runtime.install({ logger: sdkLogger(logger), shutdownSignals: [] });
  runtimeInstalled = true;
}

export function env(name: string): string {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set: run the tests through jest (globalSetup starts the servers)`);
  return v;
}

/** A new database cloned from the migrated template database of this run. */
export async function createTestDatabase(): Promise<{ url: string; pool: Pool; drop(): Promise<void> }> {
  const name = `t_${crypto.randomBytes(6).toString('hex')}`;
  const admin = new Client({ connectionString: env('ARMADA_TEST_ADMIN_URL') });
  await admin.connect();
  // CREATE DATABASE … TEMPLATE needs the template to have no other sessions: retry briefly when a parallel file is cloning.
  for (let i = 0; ; i++) {
    try {
      await admin.query(`CREATE DATABASE ${name} TEMPLATE armada`);
      break;
    } catch (err) {
      if (i > 50 || !/being accessed by other users/.test((err as Error).message)) throw err;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  await admin.end();
  const url = env('ARMADA_TEST_DATABASE_URL').replace(/\/armada$/, `/${name}`);
  const pool = createPool(url, logger);
  return {
    url,
    pool,
    async drop() {
      await pool.end().catch(() => undefined);
      const c = new Client({ connectionString: env('ARMADA_TEST_ADMIN_URL') });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await c.end();
    },
  };
}

/** A pool on a database the caller owns: `drop` only closes the pool. */
function existingDatabase(url: string): { url: string; pool: Pool; drop(): Promise<void> } {
  const pool = createPool(url, logger);
  return { url, pool, drop: () => pool.end().catch(() => undefined) };
}

/** The API key every service of a test config takes (ARMADA_API_KEY). */
export const TEST_API_KEY = 'test-api-key-0123456789';

/** A config in a fresh ARMADA_HOME, with a task queue of its own; `file` becomes config.json. */
export function testConfig(file: Record<string, unknown> = {}, extraEnv: Record<string, string> = {}): ArmadaConfig {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-home-'));
  const configPath = path.join(home, 'config.json');
  fs.writeFileSync(configPath, JSON.stringify(file));
  return loadConfig({
    HOME: os.homedir(),
    ARMADA_HOME: home,
    ARMADA_CONFIG: configPath,
    ARMADA_API_KEY: TEST_API_KEY,
    TEMPORAL_ADDRESS: env('ARMADA_TEST_TEMPORAL_ADDRESS'),
    ARMADA_TASK_QUEUE: `test-${crypto.randomBytes(5).toString('hex')}`,
    ...extraEnv,
  });
}

export interface TestStack {
  config: ArmadaConfig;
  db: Pool;
  dbUrl: string;
  keys: ResolvedKeys;
  temporal: TemporalHandle;
  apps: Partial<Record<ServiceName, FastifyInstance>>;
  workers?: RunningWorkers;
  metrics: ReturnType<typeof createMetrics>;
  app(name: ServiceName): FastifyInstance;
  close(): Promise<void>;
}

/** Builds the requested services (ready for `inject`) on a fresh database; with `worker: true` also a worker. */
export async function startTestStack(
  opts: {
    services?: ServiceName[];
    worker?: boolean;
    /** The worker's test-only fault hooks (lib/faults.ts), with `worker: true`. */
    faults?: Faults;
    file?: Record<string, unknown>;
    env?: Record<string, string>;
    /** Logger of the services and worker (default: the silent test logger), e.g. to inspect what gets logged. */
    logger?: Logger;
    /** Runs on each app before ready(), e.g. to add a route that app-level hooks must cover. */
    beforeReady?: (name: ServiceName, app: FastifyInstance) => void | Promise<void>;
    /** What the services are told is down (as `armada api`'s probes would); unset: not tracked. */
    dependencies?: DependencyState;
    /**
     * A migrated database to use instead of a fresh clone of the run's template (kept at close), e.g. one on a
     * PostgreSQL of the test's own that it kills and restarts (test/support/ownPostgres.ts).
     */
    databaseUrl?: string;
  } = {},
): Promise<TestStack> {
  const config = testConfig(opts.file, opts.env);
  const database = opts.databaseUrl ? existingDatabase(opts.databaseUrl) : await createTestDatabase();
  const keys = resolveKeys(config);
  const temporal = createTemporalHandle(env('ARMADA_TEST_TEMPORAL_ADDRESS'), config.temporal.namespace);
  const metrics = createMetrics();
  const apps: Partial<Record<ServiceName, FastifyInstance>> = {};
  const log = opts.logger ?? logger;
  const names = opts.services ?? ['task'];
  const perService = serviceMetrics(names, metrics);
  for (const name of names) {
    const app = await buildService(name, { db: database.pool, config, keys, temporal, logger: log, metrics: perService[name], dependencies: opts.dependencies });
    apps[name] = app;
    await opts.beforeReady?.(name, app);
    await app.ready();
  }
  if (opts.worker) ensureTemporalRuntime();
  const workers = opts.worker
    ? await startWorkers({ config, db: database.pool, logger: log, metrics, address: env('ARMADA_TEST_TEMPORAL_ADDRESS'), namespace: config.temporal.namespace, shutdownGraceMs: 2000, faults: opts.faults })
    : undefined;
  return {
    config,
    db: database.pool,
    dbUrl: database.url,
    keys,
    temporal,
    apps,
    workers,
    metrics,
    app(name) {
      const a = apps[name];
      if (!a) throw new Error(`service ${name} was not started`);
      return a;
    },
    async close() {
      await Promise.allSettled(Object.values(apps).map((a) => a?.close()));
      await workers?.stop();
      await temporal.close();
      await database.drop();
      fs.rmSync(config.home, { recursive: true, force: true });
    },
  };
}

/** Each of `services`' apps listening on a free loopback port (raw-socket tests); their ports by service. */
export async function listenOnLoopback(stack: TestStack, services: readonly ServiceName[]): Promise<Partial<Record<ServiceName, number>>> {
  const ports: Partial<Record<ServiceName, number>> = {};
  for (const service of services) {
    const app = stack.app(service);
    await app.listen({ port: 0, host: '127.0.0.1' });
    ports[service] = (app.server.address() as AddressInfo).port;
  }
  return ports;
}

/** (Another) worker for a stack's config and database, e.g. to bring work back after `stack.workers.stop()`. */
export function startStackWorkers(stack: TestStack, extra: Partial<WorkerOptions> = {}): Promise<RunningWorkers> {
  ensureTemporalRuntime();
  return startWorkers({
    config: stack.config,
    db: stack.db,
    logger,
    metrics: stack.metrics,
    address: env('ARMADA_TEST_TEMPORAL_ADDRESS'),
    namespace: stack.config.temporal.namespace,
    shutdownGraceMs: 2000,
    ...extra,
  });
}

/** A git repository with one commit on `main`, in a temp dir. */
export function makeGitRepo(files: Record<string, string> = { 'README.md': '# test\n' }): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-repo-'));
  const { execFileSync } = require('node:child_process') as typeof import('node:child_process');
  const g = (...args: string[]) => execFileSync('git', args, { cwd: dir, stdio: 'pipe', env: { ...process.env, GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@example.com', GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@example.com' } });
  g('init', '-q', '-b', 'main');
  for (const [name, content] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
    fs.writeFileSync(path.join(dir, name), content);
  }
  g('add', '-A');
  g('commit', '-q', '-m', 'initial');
  return dir;
}

/** Polls fn until it returns a truthy value or the timeout passes. */
export async function eventually<T>(fn: () => Promise<T | undefined | null | false>, timeoutMs = 20_000, intervalMs = 100): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      const v = await fn();
      if (v) return v as T;
    } catch (err) {
      last = err;
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
  throw new Error(`condition not met in ${timeoutMs} ms${last ? `: ${(last as Error).message}` : ''}`);
}
