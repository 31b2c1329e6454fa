'use strict';
// One embedded PostgreSQL and one Temporal dev server for the whole jest run, started through `armada infra`
// (the same runtime code `armada start` uses). Test files get their own database cloned from the migrated one.
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const readline = require('node:readline');
const { stopInfraProcess } = require('./infraProcess');
const { freePort } = require('./ports');
const { toolsDir } = require('../../scripts/test-tools');

module.exports = async function globalSetup() {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-test-'));
  // Every temporary directory of the run (test repos, homes, browser profiles, and those of the processes the tests
  // start) goes under one directory that globalTeardown removes: test files and children inherit TMPDIR, and
  // os.tmpdir() follows it. Before, each run left thousands of directories in /tmp.
  const runTmp = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-test-tmp-'));
  fs.chmodSync(runTmp, 0o1777); // like /tmp: the embedded PostgreSQL's own user writes there too (initdb's password file)
  process.env.TMPDIR = runTmp;
  const [pgPort, temporalPort] = [await freePort(), await freePort()];
  const bundle = path.join(home, 'workflow-bundle.js');
  const bin = path.join(__dirname, '..', '..', 'bin', 'armada');
  // --until-stdin-closes: if jest dies without its teardown (out of memory, SIGKILL), the servers stop with it
  const args = [bin, 'infra', '--home', home, '--pg-port', String(pgPort), '--temporal-port', String(temporalPort), '--bundle', bundle, '--until-stdin-closes', '--show-secrets'];
  // A missing Temporal CLI is provisioned like `armada start` does, into a tools dir that outlives this run's home
  // (default ~/.armada/tools), so it is downloaded once, not on every run. Test files inherit ARMADA_TOOLS_DIR.
  process.env.ARMADA_TOOLS_DIR = toolsDir();
  const child = spawn(process.execPath, args, {
    stdio: ['pipe', 'pipe', 'pipe'],
    env: { ...process.env, ARMADA_LOG_LEVEL: 'warn', ARMADA_LOG_FORMAT: 'json', DATABASE_URL: '', TEMPORAL_ADDRESS: '' },
  });
  let stderr = '';
  child.stderr.on('data', (d) => {
    stderr = (stderr + d.toString()).slice(-4000);
    for (const line of d.toString().split('\n')) if (line.startsWith('armada: ')) process.stderr.write(`\n${line}\n`); // the provisioning line
  });
  const waitReady = new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`armada infra did not start in 600 s: ${stderr}`)), 600_000);
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`armada infra exited (${code}): ${stderr}`));
    });
    readline.createInterface({ input: child.stdout }).on('line', (line) => {
      try {
        const msg = JSON.parse(line);
        if (msg.event === 'ready') {
          clearTimeout(timer);
          resolve(msg);
        }
      } catch {
        /* log line */
      }
    });
  });
  let ready;
  try {
    ready = await waitReady;
  } catch (err) {
    // jest runs no globalTeardown after a failed globalSetup: stop what was started and remove the run's directories
    await stopInfraProcess(child);
    for (const dir of [home, runTmp]) fs.rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  child.removeAllListeners('exit');
  globalThis.__ARMADA_INFRA__ = { child, home, runTmp };
  process.env.ARMADA_TEST_DATABASE_URL = ready.databaseUrl;
  process.env.ARMADA_TEST_ADMIN_URL = ready.adminUrl;
  process.env.ARMADA_TEST_TEMPORAL_ADDRESS = ready.temporalAddress;
  process.env.ARMADA_TEST_HOME = home;
  process.env.ARMADA_WORKFLOW_BUNDLE = bundle;
};
