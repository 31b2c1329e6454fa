/**
 * The child process of test/support/ownPostgres.ts: an embedded PostgreSQL (lib/runtime/embeddedPostgres.ts, as
 * `armada start` runs it) in `dataDir` on `port`, migrated. Prints `{"event":"ready","url":…}`; then each stdin line
 * `stop` (fast shutdown), `kill` (SIGKILL of the postmaster) or `start` is done and answered with the same word as
 * `event`. When stdin closes (the test ended, or died) the server is stopped and the process exits.
 */
import readline from 'node:readline';
import { migrate } from '../../lib/db/migrate';
import { createPool } from '../../lib/db/pool';
import { createLogger } from '../../lib/logger';
import { startEmbeddedPostgres, type RunningPostgres } from '../../lib/runtime/embeddedPostgres';

const say = (event: Record<string, unknown>): void => {
  process.stdout.write(`${JSON.stringify(event)}\n`);
};

async function main(dataDir: string, port: number): Promise<void> {
  const logger = createLogger('silent');
  // ARMADA_TEST_PG_SETTINGS: more server settings as a JSON object (startOwnPostgres's `settings`)
  const settings = process.env.ARMADA_TEST_PG_SETTINGS ? (JSON.parse(process.env.ARMADA_TEST_PG_SETTINGS) as Record<string, string>) : undefined;
  const pg: RunningPostgres = await startEmbeddedPostgres({ dataDir, port, logger, settings });
  const pool = createPool(pg.url, logger);
  try {
    await migrate(pool);
  } finally {
    await pool.end();
  }
  let running = true;
  let queue = Promise.resolve();
  const commands: Record<string, () => Promise<Record<string, unknown> | undefined>> = {
    stop: async () => {
      if (running) await pg.stop();
      running = false;
      return undefined;
    },
    kill: async () => {
      if (!running) return undefined;
      const server = pg.server();
      process.kill(server.pid, 'SIGKILL');
      await server.exited;
      running = false;
      return undefined;
    },
    start: async () => {
      if (!running) await pg.restart();
      running = true;
      return undefined;
    },
    // a stop while a restart is still starting (after `kill`): answers how that restart ended
    'restart-stop': async () => {
      const outcome = pg.restart().then(
        () => 'ready',
        (err: Error) => err.message,
      );
      await pg.stop();
      running = false;
      return { outcome: await outcome };
    },
  };
  readline.createInterface({ input: process.stdin }).on('line', (line) => {
    const command = commands[line.trim()];
    if (!command) {
      say({ event: 'error', message: `unknown command ${line}` });
      return;
    }
    queue = queue.then(command).then(
      (result) => say({ ...result, event: line.trim() }),
      (err: unknown) => say({ event: 'error', message: (err as Error).message }),
    );
  });
  process.stdin.once('end', () => {
    void queue.then(() => (running ? pg.stop() : undefined)).finally(() => process.exit(0));
  });
  say({ event: 'ready', url: pg.url });
}

const [dataDir, port] = process.argv.slice(-2); // after `node -e <loader> --`
main(dataDir as string, Number(port)).catch((err: unknown) => {
  process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
