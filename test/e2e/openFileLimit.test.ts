/**
 * Under a low open-file limit (`ulimit -n 64`) `armada worker` used to abort at its first workflow task with a native
 * assertion ("Failed to initialize uv loop.") and a stack trace. `armada start` and `armada worker` now refuse at once,
 * in one line with the limit found, the minimum and how to raise it, before they start anything.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ARMADA_BIN } from '../support/armadaProcess';
import { processesUsing } from '../support/processes';

let home: string;

beforeEach(() => {
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-nofile-'));
});
afterEach(() => {
  fs.rmSync(home, { recursive: true, force: true });
});

/** `armada <command>` under `ulimit -n <limit>` (soft and hard, as `ulimit -n` in a shell sets them). */
function armadaUnderLimit(limit: number, command: string): { status: number | null; stderr: string } {
  const env = { ...process.env, ARMADA_HOME: home, ARMADA_LOG_LEVEL: 'warn', DATABASE_URL: 'postgres://armada@127.0.0.1:1/armada', TEMPORAL_ADDRESS: '127.0.0.1:1' };
  const r = spawnSync('sh', ['-c', `ulimit -n ${limit} && exec "$0" "$1" ${command}`, process.execPath, ARMADA_BIN], { env, encoding: 'utf8', timeout: 60_000 });
  return { status: r.status, stderr: r.stderr.trim() };
}

test.each(['worker', 'start'])('armada %s under ulimit -n 64 refuses in one line naming the limit, the minimum and ulimit -n 4096', (command) => {
  const r = armadaUnderLimit(64, command);
  expect(r.status).toBe(1);
  expect(r.stderr.split('\n')).toHaveLength(1);
  expect(r.stderr).toMatch(/^armada: the open-file limit is 64, below the 1024 .* needs: raise it .*ulimit -n 4096/);
  expect(processesUsing(home)).toEqual([]);
});
