/** Pieces shared by the CLI commands: config + logger, the database URL, signals. */
import path from 'node:path';
import { configWarning, loadConfig, type ArmadaConfig } from '../lib/config';
import { createLogger, resolveLogFormat, type Logger } from '../lib/logger';
import { startEmbeddedPostgres, type RunningPostgres } from '../lib/runtime/embeddedPostgres';
import { startTemporalDevServer, type RunningDevServer } from '../lib/runtime/temporalDevServer';
import { supervise, type Supervisor } from '../lib/runtime/supervisor';
import type { DependencyName } from '../lib/runtime/dependencies';

/** The config and logger of a command that runs servers; a config warning is its first log line. */
export function bootstrap(): { config: ArmadaConfig; logger: Logger } {
  const config = loadConfig();
  const logger = createLogger(config.logLevel, 'armada', undefined, resolveLogFormat(config.logFormat, process.stdout.isTTY === true));
  const warning = configWarning(config);
  if (warning) logger.warn({ configPath: config.missingConfigFile }, warning);
  return { config, logger };
}

export interface Infrastructure {
  databaseUrl: string;
  temporalAddress: string;
  postgres?: RunningPostgres;
  temporal?: RunningDevServer;
  stop(): Promise<void>;
}

/** What `armada start` hears from the supervisors of its servers. */
export interface SupervisionEvents {
  onDown(name: DependencyName, reason: string): void;
  onUp(name: DependencyName): void;
  /** The restart budget is spent; `message` is one line naming the dependency. */
  onGiveUp(message: string): void;
}

/**
 * Starts what the environment does not point at: embedded PostgreSQL and/or the Temporal dev server. With
 * `supervision`, each is restarted when it dies (config.supervision's backoff and budget).
 */
export async function startInfrastructure(config: ArmadaConfig, logger: Logger, supervision?: SupervisionEvents): Promise<Infrastructure> {
  const started: { postgres?: RunningPostgres; temporal?: RunningDevServer } = {};
  const supervisors: Supervisor[] = [];
  const stop = async () => {
    await Promise.all(supervisors.map((s) => s.stop()));
    if (started.temporal) await started.temporal.stop().catch((err) => logger.warn({ err }, 'stopping temporal failed'));
    if (started.postgres) await started.postgres.stop().catch((err) => logger.warn({ err }, 'stopping postgres failed'));
  };
  try {
    // allSettled: when one fails, the other is stopped only once it has finished starting (nothing is left running)
    const [pgResult, temporalResult] = await Promise.allSettled([
      config.databaseUrl
        ? Promise.resolve(undefined)
        : startEmbeddedPostgres({ dataDir: path.join(config.home, 'pg'), port: config.embedded.pgPort, logger }).then((p) => (started.postgres = p)),
      config.temporal.address
        ? Promise.resolve(undefined)
        : startTemporalDevServer({
            cliPath: config.temporal.cliPath,
            toolsDir: config.toolsDir,
            onProgress: (line) => process.stderr.write(`${line}\n`),
            dbFile: path.join(config.home, 'temporal.db'),
            // loopback only, like the embedded PostgreSQL: the dev server has no authentication, and anyone reaching it
            // could start workflows past the task key (workers on other hosts need an external TEMPORAL_ADDRESS)
            ip: '127.0.0.1',
            port: config.embedded.temporalPort,
            uiPort: config.embedded.temporalUiPort,
            namespace: config.temporal.namespace,
            logger,
          }).then((t) => (started.temporal = t)),
    ]);
    for (const r of [pgResult, temporalResult]) if (r.status === 'rejected') throw r.reason;
    const postgres = pgResult.status === 'fulfilled' ? pgResult.value : undefined;
    const temporal = temporalResult.status === 'fulfilled' ? temporalResult.value : undefined;
    if (supervision) {
      const watch = (name: DependencyName, server: RunningPostgres | RunningDevServer) =>
        supervisors.push(
          supervise(server.server(), {
            name,
            restart: () => server.restart(),
            policy: config.supervision,
            logger,
            onDown: (reason) => supervision.onDown(name, reason),
            onUp: () => supervision.onUp(name),
            onGiveUp: supervision.onGiveUp,
          }),
        );
      if (postgres) watch('postgres', postgres);
      if (temporal) watch('temporal', temporal);
    }
    return {
      databaseUrl: config.databaseUrl ?? (postgres as RunningPostgres).url,
      temporalAddress: config.temporal.address ?? (temporal as RunningDevServer).address,
      postgres,
      temporal,
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}

/**
 * The signals that stop a process in order: Ctrl-C, a supervisor's SIGTERM, and SIGHUP, which a closed terminal or
 * ssh session sends (its default action killed armada at once, leaving its servers and agents running).
 */
export const STOP_SIGNALS: readonly NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];

/** Runs `shutdown` on the first of STOP_SIGNALS; a second signal exits at once. Resolves when shutdown is done. */
export function untilSignal(logger: Logger, shutdown: (signal: string) => Promise<void>): Promise<void> {
  return new Promise((resolve) => {
    let stopping = false;
    const handler = (signal: NodeJS.Signals) => {
      if (stopping) {
        logger.warn({ signal }, 'second signal: exiting now');
        process.exit(130);
      }
      stopping = true;
      // after a hangup the terminal is gone: a write to it fails (EIO), which must not cut the stop short
      if (signal === 'SIGHUP') for (const stream of [process.stdout, process.stderr]) stream.on('error', () => undefined);
      logger.info({ signal }, 'shutting down');
      shutdown(signal)
        .catch((err) => logger.error({ err }, 'shutdown failed'))
        .finally(() => {
          for (const s of STOP_SIGNALS) process.removeListener(s, handler);
          resolve();
        });
    };
    for (const s of STOP_SIGNALS) process.on(s, handler);
  });
}
