/**
 * A test run whose global setup fails (here: TEMPORAL_CLI_PATH names no executable, so `armada infra` refuses to
 * start) leaves nothing behind: jest runs no globalTeardown then, so globalSetup stops its `armada infra` and removes
 * its home and the run's temporary directory itself, and the error says what to do.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { processesUsing } from '../support/processes';

test('a failed global setup stops what it started and removes its directories', () => {
  const base = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-setup-fail-'));
  try {
    const setup = path.join(__dirname, '..', 'support', 'globalSetup.js');
    const r = spawnSync(process.execPath, ['-e', `require(${JSON.stringify(setup)})().then(() => process.exit(0), (e) => { console.error(e.message); process.exit(3); })`], {
      env: { ...process.env, TMPDIR: base, TEMPORAL_CLI_PATH: path.join(base, 'no-temporal-here') },
      encoding: 'utf8',
      timeout: 120_000,
    });
    expect(r.status).toBe(3);
    expect(r.stderr).toMatch(/TEMPORAL_CLI_PATH=.*no-temporal-here is not an executable file/);
    expect(fs.readdirSync(base)).toEqual([]);
    expect(processesUsing(base)).toEqual([]);
  } finally {
    fs.rmSync(base, { recursive: true, force: true });
  }
});
