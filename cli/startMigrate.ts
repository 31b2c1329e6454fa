/**
 * The migrations of `armada start`, which its own embedded PostgreSQL may not live through: a kill -9 or the OOM killer
 * during the first start after an upgrade. Its supervisor starts that server again (lib/runtime/supervisor.ts), so the
 * start says so in one line on stderr, waits for it to answer and runs the migrations again: they go on from the one
 * that was cut, which was rolled back whole (each migration is one transaction with its schema_migrations row:
 * lib/db/migrate.ts). Before session 52 the start exited 1 although its PostgreSQL was back a moment later.
 *
 * It gives up, exiting 1 with the migrations' own line (what was cut, and that running the start again is safe), when
 * the server does not answer within MIGRATION_RESTART_WAIT_MS, when its supervisor gives up (it keeps dying), or after
 * MIGRATION_RESTARTS restarts. `armada infra` migrates through this too, its PostgreSQL supervised while it does
 * (cli/infra.ts). A PostgreSQL of DATABASE_URL (nobody here restarts it), or a failure that is not the
 * server's death (a full disk, a read-only server), is as in `armada migrate`: exit 1 with that line at once.
 */
import type { Pool } from 'pg';
import { migrate, MigrationCut } from '../lib/db/migrate';
import { isPostgresUnreachable } from '../lib/db/pool';
import { OperatorError } from '../lib/errors';
import type { ChildServer } from '../lib/runtime/supervisor';

/** How long the start waits for its restarted PostgreSQL to answer. */
export const MIGRATION_RESTART_WAIT_MS = 60_000;
/** How many times the migrations are taken up again after their PostgreSQL died, before the start gives up. */
export const MIGRATION_RESTARTS = 3;
/** How long after the connection's end the server's own exit is waited for (it comes first, as a rule). */
const EXIT_SEEN_WITHIN_MS = 5000;

/** Resolves with how `server` exited, or undefined when it is still running `ms` from now. */
function exitedWithin(server: ChildServer, ms: number): Promise<string | undefined> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    server.exited,
    new Promise<undefined>((resolve) => {
      timer = setTimeout(() => resolve(undefined), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

/** Whether `pool` gets an answer before `deadline`, asking every 250 ms; false at once when `givenUp()` says so. */
async function answersAgain(pool: Pool, deadline: number, givenUp: () => boolean): Promise<boolean> {
  for (;;) {
    if (givenUp()) return false;
    const answered = await pool.query('SELECT 1').then(
      () => true,
      () => false,
    );
    if (answered) return true;
    if (Date.now() >= deadline) return false;
    await new Promise((r) => setTimeout(r, 250));
  }
}

/**
 * migrate(pool), taken up again while the embedded PostgreSQL `ownServer()` (undefined: DATABASE_URL's) died under
 * it and its supervisor restarted it; `gaveUp` resolves when that supervisor gives up.
 */
export async function migrateOnOwnPostgres(pool: Pool, ownServer: (() => ChildServer) | undefined, gaveUp: Promise<string>): Promise<string[]> {
  let supervisorGaveUp: string | undefined;
  void gaveUp.then((message) => {
    supervisorGaveUp = message;
  });
  for (let restarts = 0; ; restarts++) {
    const server = ownServer?.();
    try {
      return await migrate(pool);
    } catch (err) {
      const cause = err instanceof MigrationCut ? err.error : err;
      // (a raw error is left as it was unless this server has died under the migrations already)
      if (!server || restarts >= MIGRATION_RESTARTS || !isPostgresUnreachable(cause)) throw restarts > 0 ? asOneLine(err) : err;
      // the connection ended because the server died (not a network blip, not the server refusing)
      const how = await exitedWithin(server, EXIT_SEEN_WITHIN_MS);
      if (how === undefined) throw restarts > 0 ? asOneLine(err) : err;
      const what = err instanceof MigrationCut ? err.what : `PostgreSQL stopped answering as the migrations began (${(err as Error).message})`;
      process.stderr.write(
        `armada: ${what}; the embedded PostgreSQL ${how} and is being restarted: the migrations go on once it answers (waiting up to ${MIGRATION_RESTART_WAIT_MS / 1000} s)\n`,
      );
      if (await answersAgain(pool, Date.now() + MIGRATION_RESTART_WAIT_MS, () => supervisorGaveUp !== undefined)) continue;
      const line = asOneLine(err);
      // the supervisor's give-up (postgres failed 5 times within 300 s …) is the cause: said first, in the same line
      throw supervisorGaveUp === undefined ? line : new OperatorError(`${supervisorGaveUp}: ${(line as Error).message}`);
    }
  }
}

/**
 * The migrations' failure, after their own PostgreSQL died under them, as the one line `armada start` exits with: a cut
 * migration says its own; PostgreSQL gone before any began (its lock, its table of applied migrations), the same
 * without a migration to name.
 */
function asOneLine(err: unknown): unknown {
  if (err instanceof OperatorError || !isPostgresUnreachable(err)) return err;
  return new OperatorError(
    `PostgreSQL stopped answering as the migrations began (${(err as Error).message}): none was cut in the middle (each migration is one transaction); run armada migrate (or armada start) again once PostgreSQL answers: it applies every migration not applied yet`,
  );
}
