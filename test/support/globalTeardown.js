'use strict';
const fs = require('node:fs');
const { stopInfraProcess } = require('./infraProcess');

module.exports = async function globalTeardown() {
  const infra = globalThis.__ARMADA_INFRA__;
  if (!infra) return;
  await stopInfraProcess(infra.child);
  fs.rmSync(infra.home, { recursive: true, force: true });
  // the run's temporary directories (globalSetup points TMPDIR there); a process still writing there is not waited for
  try {
    fs.rmSync(infra.runTmp, { recursive: true, force: true, maxRetries: 3 });
  } catch (err) {
    process.stderr.write(`could not remove the test run's temporary directory ${infra.runTmp}: ${err.message}\n`);
  }
};
