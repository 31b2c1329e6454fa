#!/usr/bin/env node
// `npm test`: jest in two phases (test/support/testPhases.js; docs/testing.md, "Run time"): the files that measure
// latency beside files that mostly wait, on 2 workers; then the rest on 3. Both phases always run; the exit status is
// the first failure's. With arguments (`npm test -- test/unit`), one jest run with those arguments, as `npx jest`.
'use strict';
const { spawnSync } = require('node:child_process');
const path = require('node:path');

const jest = require.resolve('jest/bin/jest');
const root = path.join(__dirname, '..');

function run(phase, args) {
  const env = { ...process.env };
  if (phase) env.ARMADA_TEST_PHASE = phase;
  else delete env.ARMADA_TEST_PHASE;
  if (phase) process.stdout.write(`test: jest, ${phase === 'quiet' ? 'the files that measure latency, beside files that wait' : 'the other files'}\n`);
  const r = spawnSync(process.execPath, [jest, ...args], { cwd: root, env, stdio: 'inherit' });
  if (r.error) {
    process.stderr.write(`test: could not run jest: ${r.error.message}\n`);
    return 1;
  }
  return r.status ?? 1;
}

const args = process.argv.slice(2);
if (args.length) process.exit(run(undefined, args));
const quiet = run('quiet', []);
const rest = run('rest', []);
process.exit(quiet || rest);
