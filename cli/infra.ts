/**
 * `armada infra`: embedded PostgreSQL + Temporal dev server + migrations, addresses printed as one JSON line. The
 * database URLs are printed with their password as `***` (the line lands in terminals, CI logs and scrollback), with
 * the file that holds the embedded server's password; `--show-secrets` prints them whole (docs/operations.md).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createPool } from '../lib/db/pool';
import { embeddedPasswordFile } from '../lib/runtime/embeddedPostgres';
import { supervise } from '../lib/runtime/supervisor';
import { redactUrlCredentials } from '../lib/urlCredentials';
import { writeWorkflowBundle } from '../workers/createWorker';
import { unreachableDatabaseUrl } from './migrate';
import { bootstrap, startInfrastructure, untilSignal } from './runtime';
import { migrateOnOwnPostgres } from './startMigrate';

export interface InfraReady {
  databaseUrl: string;
  adminUrl?: string;
  /** the embedded server's password file; absent with DATABASE_URL (whose password is the operator's own) */
  passwordFile?: string;
  temporalAddress: string;
  home: string;
  bundle?: string;
}

/** The ready line: the URLs' passwords as `***` unless `showSecrets`, and where the embedded password is kept. */
export function readyLine(ready: InfraReady, showSecrets: boolean): string {
  const shown = (url: string | undefined) => (url === undefined || showSecrets ? url : redactUrlCredentials(url));
  return `${JSON.stringify({ event: 'ready', ...ready, databaseUrl: shown(ready.databaseUrl), adminUrl: shown(ready.adminUrl) })}\n`;
}

export async function runInfra(opts: { home?: string; pgPort?: number; temporalPort?: number; bundle?: string; untilStdinCloses?: boolean; showSecrets?: boolean }): Promise<number> {
  // With --until-stdin-closes the servers go when the caller does, even one killed outright (jest out of memory,
  // SIGKILL): its end of the stdin pipe closes and the servers are stopped like on SIGTERM.
  let callerGone = false;
  let onCallerGone = () => {
    callerGone = true;
  };
  if (opts.untilStdinCloses) {
    process.stdin.once('end', () => onCallerGone());
    process.stdin.resume();
  }
  if (opts.home) process.env.ARMADA_HOME = opts.home;
  else process.env.ARMADA_HOME ??= fs.mkdtempSync(path.join(os.tmpdir(), 'armada-infra-'));
  const { config, logger } = bootstrap();
  const infra = await startInfrastructure(
    {
      ...config,
      embedded: { pgPort: opts.pgPort ?? config.embedded.pgPort, temporalPort: opts.temporalPort ?? config.embedded.temporalPort, temporalUiPort: null },
    },
    logger,
  );
  const pool = createPool(infra.databaseUrl, logger);
  // its embedded PostgreSQL killed under the migrations (kill -9, the OOM killer) is started again, and the migrations
  // go on once it answers, as in `armada start` (cli/startMigrate.ts); only while they run: after the ready line a
  // server that dies stays down, as before
  let giveUp: (message: string) => void = () => undefined;
  const gaveUp = new Promise<string>((resolve) => {
    giveUp = resolve;
  });
  const postgres = infra.postgres;
  const watch = postgres && supervise(postgres.server(), { name: 'postgres', restart: () => postgres.restart(), policy: config.supervision, logger, onGiveUp: giveUp });
  try {
    await migrateOnOwnPostgres(pool, postgres && (() => postgres.server()), gaveUp).finally(() => watch?.stop());
    if (opts.bundle) await writeWorkflowBundle(opts.bundle);
  } catch (err) {
    await pool.end();
    await infra.stop();
    throw unreachableDatabaseUrl(config.databaseUrl, err);
  } finally {
    await pool.end().catch(() => undefined);
  }
  const stopped = untilSignal(logger, () => infra.stop()); // before the ready line: the caller may signal at once
  onCallerGone = () => process.kill(process.pid, 'SIGTERM');
  if (callerGone) onCallerGone();
  process.stdout.write(
    readyLine(
      {
        databaseUrl: infra.databaseUrl,
        adminUrl: infra.postgres?.adminUrl,
        passwordFile: infra.postgres ? embeddedPasswordFile(path.join(config.home, 'pg')) : undefined,
        temporalAddress: infra.temporalAddress,
        home: config.home,
        bundle: opts.bundle,
      },
      opts.showSecrets === true,
    ),
  );
  await stopped;
  return 0;
}
