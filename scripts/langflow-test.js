#!/usr/bin/env node
'use strict';
/**
 * `npm run test:langflow`: the opt-in real-platform test (docs/scheduler.md#real-langflow-test), never part of
 * `npm test` or CI. Installs the pinned LangFlow from PyPI into `$ARMADA_TOOLS_DIR/langflow-venv` (default
 * ~/.armada/tools; kept between runs, reinstalled when the pin changes), then runs test/langflow with jest: its
 * global setup starts the test PostgreSQL and Temporal like `npm test` does. Needs python3 with venv and PyPI.
 */
const { execFileSync, spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { toolsDir } = require('./test-tools');

/** The pin: LangFlow's release the test and docs/scheduler.md's record are about; uv resolves its dependencies. */
const LANGFLOW = { package: 'langflow', version: '1.13.0' };
const UV = { package: 'uv', version: '0.13.9' };

function say(line) {
  process.stdout.write(`test:langflow: ${line}\n`);
}

function lastLines(err) {
  return String(err.stderr || err.stdout || err.message || err).trim().split('\n').slice(-5).join('\n');
}

/** The langflow executable of the venv, installing the pinned version first when it is missing or another one. */
function provisionLangflow() {
  const venv = path.join(toolsDir(), 'langflow-venv');
  const marker = path.join(venv, 'armada-tool.json');
  const bin = path.join(venv, 'bin', 'langflow');
  let installed;
  try {
    installed = JSON.parse(fs.readFileSync(marker, 'utf8'));
  } catch {
    installed = undefined;
  }
  if (installed && installed.version === LANGFLOW.version && fs.existsSync(bin)) {
    say(`using ${LANGFLOW.package} ${LANGFLOW.version} in ${venv}`);
    return { bin, installSeconds: null };
  }
  say(`installing ${LANGFLOW.package}==${LANGFLOW.version} into ${venv} (about 2 GB; minutes on a first run)`);
  const t0 = Date.now();
  fs.rmSync(venv, { recursive: true, force: true });
  fs.mkdirSync(path.dirname(venv), { recursive: true });
  const run = (cmd, args, env = process.env) => execFileSync(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'], timeout: 60 * 60_000, env, maxBuffer: 64 * 1024 * 1024 });
  try {
    run('python3', ['-m', 'venv', venv]);
    run(path.join(venv, 'bin', 'python'), ['-m', 'pip', 'install', '--quiet', '--disable-pip-version-check', `${UV.package}==${UV.version}`]);
    run(path.join(venv, 'bin', 'uv'), ['pip', 'install', '--quiet', '--python', path.join(venv, 'bin', 'python'), `${LANGFLOW.package}==${LANGFLOW.version}`], {
      ...process.env,
      VIRTUAL_ENV: venv,
    });
  } catch (err) {
    fs.rmSync(venv, { recursive: true, force: true });
    say(`cannot install ${LANGFLOW.package}==${LANGFLOW.version}:\n${lastLines(err)}`);
    process.exit(1);
  }
  const installSeconds = Math.round((Date.now() - t0) / 1000);
  fs.writeFileSync(marker, `${JSON.stringify({ ...LANGFLOW, installedAt: new Date().toISOString(), installSeconds }, null, 2)}\n`);
  say(`installed in ${installSeconds} s`);
  return { bin, installSeconds };
}

const { bin, installSeconds } = provisionLangflow();
const record = process.env.ARMADA_LANGFLOW_RECORD || path.join(os.tmpdir(), 'langflow-run.json');
const env = { ...process.env, ARMADA_LANGFLOW_TEST: '1', ARMADA_LANGFLOW_BIN: bin, ARMADA_LANGFLOW_RECORD: record };
const t0 = Date.now();
const r = spawnSync(process.execPath, [require.resolve('jest/bin/jest'), '--runInBand', path.join('test', 'langflow')], {
  cwd: path.join(__dirname, '..'),
  env,
  stdio: 'inherit',
});
try {
  const run = JSON.parse(fs.readFileSync(record, 'utf8'));
  run.installSeconds = installSeconds;
  run.testSeconds = Math.round((Date.now() - t0) / 1000);
  run.outcome = r.status === 0 ? 'passed' : 'failed';
  fs.writeFileSync(record, `${JSON.stringify(run, null, 2)}\n`);
  say(`record of the run: ${record}\n${JSON.stringify(run, null, 2)}`);
} catch {
  /* the test did not get far enough to write one */
}
process.exit(r.status ?? 1);
