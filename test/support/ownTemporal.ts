/**
 * For the tests that kill or restart processes of their own: a Temporal dev server on its own SQLite file in the
 * test's home (so a kill -9 and a start on the same file keep its state), and the stop of a spawned Armada process.
 */
import type { ChildProcess } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { startTemporalDevServer, type RunningDevServer } from '../../lib/runtime/temporalDevServer';
import { logger } from './harness';

const { freePort } = require('./ports') as { freePort(): Promise<number> };

/** A dev server of the test's own, its history in `<home>/temporal.db`, on a free port (`dynamicConfig`: `KEY=VALUE`s, instead of the default). */
export async function startOwnTemporal(home: string, dynamicConfig?: readonly string[]): Promise<RunningDevServer> {
  return startTemporalDevServer({
    cliPath: process.env.TEMPORAL_CLI_PATH || 'temporal',
    toolsDir: process.env.ARMADA_TOOLS_DIR || os.tmpdir(),
    onProgress: () => undefined,
    dbFile: path.join(home, 'temporal.db'),
    ip: '127.0.0.1',
    port: await freePort(),
    uiPort: null,
    namespace: 'default',
    logger,
    dynamicConfig,
  });
}

/** SIGINT to a spawned process still running, SIGKILL when it has not exited within `graceMs`. */
export async function stopChild(child: ChildProcess | undefined, graceMs = 20_000): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGINT');
  await Promise.race([exited, new Promise((r) => setTimeout(r, graceMs).unref())]);
  if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
}
