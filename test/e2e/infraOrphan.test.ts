/**
 * `armada infra --until-stdin-closes` (what jest's global setup runs): when its caller dies without cleaning up
 * (SIGKILL, out of memory), the embedded PostgreSQL and the Temporal dev server stop too.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { ARMADA_BIN } from '../support/armadaProcess';
import { eventually } from '../support/harness';
import { processesUsing } from '../support/processes';
const { freePort } = require('../support/ports') as { freePort(): Promise<number> };

test('the servers of armada infra stop when the process that started it is killed with SIGKILL', async () => {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-orphan-'));
  const args = [ARMADA_BIN, 'infra', '--home', home, '--pg-port', String(await freePort()), '--temporal-port', String(await freePort()), '--until-stdin-closes'];
  // the caller: a node process that starts infra with a stdin pipe, relays its output, and is then killed outright
  const caller = spawn(
    process.execPath,
    ['-e', `const c = require('node:child_process').spawn(process.execPath, ${JSON.stringify(args)}, { stdio: ['pipe', 'inherit', 'inherit'] }); setInterval(() => {}, 1000);`],
    { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ARMADA_LOG_LEVEL: 'warn', DATABASE_URL: '', TEMPORAL_ADDRESS: '' } },
  );
  try {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('armada infra did not get ready')), 90_000);
      readline.createInterface({ input: caller.stdout as NodeJS.ReadableStream }).on('line', (line) => {
        if (line.includes('"event":"ready"')) {
          clearTimeout(timer);
          resolve();
        }
      });
    });
    const running = processesUsing(home);
    expect(running.some((p) => p.includes('postgres'))).toBe(true);
    expect(running.some((p) => p.includes('temporal'))).toBe(true);
    caller.kill('SIGKILL');
    await eventually(async () => processesUsing(home).length === 0, 30_000, 200);
  } finally {
    caller.kill('SIGKILL');
    fs.rmSync(home, { recursive: true, force: true });
  }
}, 150_000);
