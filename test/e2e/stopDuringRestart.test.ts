/**
 * `armada start`'s servers stopped while a restart of theirs is still under way (the supervisor restarts a server
 * that died; a dev server whose port is taken waits up to 60 s for readiness, longer than the stop's 30 s step).
 * The stop used to wait for that restart first, so armada exited 0 with the half-started dev server and the embedded
 * PostgreSQL still running, about one CI run in three. Now a server's stop also stops the one a restart spawned, that
 * restart rejects, and nothing naming the server's files is left running. And the readiness wait itself ends at its
 * deadline when the server is up but does not serve yet (it never did: such a restart hung for good).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createLogger } from '../../lib/logger';
import { resolveTemporalCli, startTemporalDevServer, waitForTemporal } from '../../lib/runtime/temporalDevServer';
import { eventually } from '../support/harness';
import { startOwnPostgres } from '../support/ownPostgres';
import { killProcessesUsing, pidsUsing } from '../support/processes';
import { startUnansweringTemporal } from '../support/unansweringTemporal';

const { freePort } = require('../support/ports') as { freePort(): Promise<number> };

jest.setTimeout(180_000);

const logger = createLogger('silent');

let dir: string;
const cleanup: (() => void | Promise<void>)[] = [];

beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-stop-restart-'));
  fs.chmodSync(dir, 0o755); // the embedded PostgreSQL runs as its own user when we are root
});
afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await c();
  killProcessesUsing(dir);
  fs.rmSync(dir, { recursive: true, force: true });
});

test('the dev server stopped while a restart waits for readiness: the stop ends within 15 s, the restart rejects, no dev server is left', async () => {
  const real = await resolveTemporalCli(process.env.TEMPORAL_CLI_PATH || 'temporal', process.env.ARMADA_TOOLS_DIR || os.tmpdir(), () => undefined);
  // the CLI, except that once `hang` exists the "server" it starts never answers (it keeps the arguments, so its
  // command line names the SQLite file like a dev server's)
  const hang = path.join(dir, 'hang');
  const cli = path.join(dir, 'temporal');
  fs.writeFileSync(cli, `#!/bin/sh\nif [ -e '${hang}' ]; then exec python3 -c 'import time; time.sleep(600)' "$@"; fi\nexec '${real}' "$@"\n`, { mode: 0o755 });
  const dbFile = path.join(dir, 'temporal.db');
  const port = await freePort();
  const dev = await startTemporalDevServer({ cliPath: cli, toolsDir: os.tmpdir(), onProgress: () => undefined, dbFile, ip: '127.0.0.1', port, uiPort: null, namespace: 'default', logger });
  cleanup.push(() => dev.stop());
  const first = dev.server();
  process.kill(first.pid, 'SIGKILL');
  await first.exited;
  fs.writeFileSync(hang, '');

  const restartOutcome = dev.restart().then(
    () => 'ready',
    (err: Error) => err.message,
  );
  await eventually(async () => pidsUsing(dbFile).length === 1, 20_000); // the restart's server is running
  await new Promise((r) => setTimeout(r, 2000)); // well into its readiness wait (up to 60 s)
  const t0 = Date.now();
  await dev.stop();
  expect(Date.now() - t0).toBeLessThan(15_000);
  expect(await restartOutcome).toMatch(/stopped while starting|exited \(code null, signal SIGTERM\)/);
  expect(pidsUsing(dbFile)).toEqual([]);
  expect(fs.existsSync(`${dbFile}.pid`)).toBe(false);

  // a restart after the stop starts the server again
  fs.rmSync(hang);
  const again = await dev.restart();
  expect(pidsUsing(dbFile)).toEqual([again.pid]);
  await dev.stop();
  expect(pidsUsing(dbFile)).toEqual([]);
});

test('embedded PostgreSQL stopped right after a restart began: the restart rejects, no postmaster of its data directory is left; a later start brings it back', async () => {
  const dataDir = path.join(dir, 'pg');
  const postmasters = () => pidsUsing(`-D ${dataDir} `); // the backends rename themselves
  const pg = await startOwnPostgres(dataDir);
  cleanup.push(() => pg.close());
  await eventually(async () => postmasters().length === 1, 5000);
  await pg.kill();
  expect(await pg.restartThenStop()).not.toBe('ready');
  expect(postmasters()).toEqual([]);
  await pg.start();
  await eventually(async () => postmasters().length === 1, 5000); // its new children take their titles
  await pg.close();
  expect(postmasters()).toEqual([]);
});

test('the readiness wait ends at its deadline when the frontend answers GetSystemInfo but never DescribeNamespace (a server up, not serving yet)', async () => {
  const temporal = await startUnansweringTemporal();
  cleanup.push(() => temporal.close());
  const t0 = Date.now();
  const outcome = await waitForTemporal(temporal.address, 'default', 3000).then(
    () => 'ready',
    (err: Error) => err.message,
  );
  expect(outcome).toMatch(/did not become ready in 3000 ms: .*DEADLINE_EXCEEDED/);
  expect(Date.now() - t0).toBeLessThan(10_000);
});
