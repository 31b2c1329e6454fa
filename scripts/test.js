#!/usr/bin/env node
// `npm test`: jest in two phases (test/support/testPhases.js; docs/testing.md, "Run time"): the files that measure
// latency beside files that mostly wait, on 3 workers; then the rest on 4. Both phases always run; the exit status is
// the first failure's. With arguments (`npm test -- test/unit`), one jest run with those arguments, as `npx jest`.
// Before the two phases, the sources are transpiled once into a temp dir that the tests start their `armada` processes
// from while it is fresh (test/support/testBuild.js; docs/testing.md, "Compiled processes"); removed at the end.
'use strict';
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { buildForTests } = require('../test/support/testBuild');

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

/** The compiled sources in a temp dir, or undefined when that failed (the tests then run bin/armada under tsx). */
async function build() {
  const out = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-test-build-'));
  const removeBuild = () => fs.rmSync(out, { recursive: true, force: true });
  process.on('exit', removeBuild);
  for (const signal of ['SIGINT', 'SIGTERM']) process.once(signal, () => process.exit(130));
  const t0 = Date.now();
  try {
    await buildForTests(out);
    process.stdout.write(`test: compiled the sources for the armada processes tests start (${((Date.now() - t0) / 1000).toFixed(1)} s)\n`);
    return out;
  } catch (err) {
    process.stderr.write(`test: could not compile the sources (${err.message}); the tests start bin/armada under tsx\n`);
    return undefined;
  }
}

async function main() {
  const args = process.argv.slice(2);
  if (args.length) return run(undefined, args);
  const out = await build();
  if (out) process.env.ARMADA_TEST_BUILD = out;
  const quiet = run('quiet', []);
  const rest = run('rest', []);
  return quiet || rest;
}

main().then((code) => process.exit(code));
