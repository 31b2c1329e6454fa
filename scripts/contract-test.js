#!/usr/bin/env node
'use strict';
/**
 * `npm run test:contract -- [--seed N] [--examples N] [--service task|scheduler|agents|traces] [--schemathesis-args
 * '…']`: runs the contract test (test/contract/schemathesis.test.ts) with another seed or more examples per operation
 * than the suite's run, or with options of schemathesis' own added after the suite's (`--mode negative`).
 * Everything else is jest's: the same global setup, servers and assertions.
 */
const { spawnSync } = require('node:child_process');
const path = require('node:path');

const env = { ...process.env };
const jestArgs = [];
const args = process.argv.slice(2);
for (let i = 0; i < args.length; i++) {
  const a = args[i];
  const value = () => {
    const v = args[++i];
    if (v === undefined) {
      console.error(`contract: ${a} needs a value`);
      process.exit(2);
    }
    return v;
  };
  if (a === '--seed') env.ARMADA_CONTRACT_SEED = value();
  else if (a === '--examples') env.ARMADA_CONTRACT_EXAMPLES = value();
  else if (a === '--schemathesis-args') env.ARMADA_CONTRACT_ARGS = value();
  else if (a === '--service') {
    const service = value();
    if (!['task', 'scheduler', 'agents', 'traces'].includes(service)) {
      console.error(`contract: --service must be one of task, scheduler, agents, traces`);
      process.exit(2);
    }
    // the test starts only this document's runs (it started all eight, and its own two waited among them)
    env.ARMADA_CONTRACT_SERVICE = service;
    jestArgs.push('-t', `${service} document`);
  }
  else {
    console.error(`contract: unknown option ${a} (use --seed N, --examples N, --service NAME, --schemathesis-args '…')`);
    process.exit(2);
  }
}
for (const k of ['ARMADA_CONTRACT_SEED', 'ARMADA_CONTRACT_EXAMPLES']) {
  if (env[k] !== undefined && !/^[1-9]\d*$/.test(env[k])) {
    console.error(`contract: ${k === 'ARMADA_CONTRACT_SEED' ? '--seed' : '--examples'} must be a positive integer`);
    process.exit(2);
  }
}
const jest = require.resolve('jest/bin/jest');
const r = spawnSync(process.execPath, [jest, path.join('test', 'contract'), ...jestArgs], { cwd: path.join(__dirname, '..'), env, stdio: 'inherit' });
process.exit(r.status ?? 1);
