#!/usr/bin/env node
'use strict';
// `npm test`'s pretest step: installs the external tools the tests use when they are missing, one line each.
// Debian packages with apt-get when running as root; PyPI packages into a venv under the tools dir
// (scripts/test-tools.js). Where it cannot install, it says so in one line and carries on: the test that needs the
// tool then fails naming the package and the install command. The Temporal CLI is provisioned by the global setup
// (armada infra), like `armada start` does.
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');
const { TEST_TOOLS, findTool, installHint, toolsDir, venvDir } = require('./test-tools');

function say(line) {
  process.stdout.write(`pretest: ${line}\n`);
}

function lastLine(err) {
  const text = String(err.stderr || err.stdout || err.message || err).trim();
  return text.split('\n').filter(Boolean).pop() || String(err.message);
}

function hasApt() {
  try {
    execFileSync('apt-get', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

function installApt(packages) {
  if (process.getuid?.() !== 0 || !hasApt()) {
    for (const pkg of packages) say(`${pkg} is missing and cannot be installed here (${process.getuid?.() !== 0 ? 'not root' : 'no apt-get'}): apt-get install ${pkg}`);
    return;
  }
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  const lock = ['-o', 'DPkg::Lock::Timeout=300'];
  try {
    execFileSync('apt-get', [...lock, 'update', '-qq'], { env, stdio: ['ignore', 'pipe', 'pipe'], timeout: 600_000 });
  } catch (err) {
    say(`apt-get update failed (${lastLine(err)}); trying the install anyway`);
  }
  for (const pkg of packages) {
    say(`installing the Debian package ${pkg} (apt-get install ${pkg})`);
    try {
      execFileSync('apt-get', [...lock, 'install', '-y', '-qq', '--no-install-recommends', pkg], { env, stdio: ['ignore', 'pipe', 'pipe'], timeout: 900_000 });
    } catch (err) {
      say(`apt-get install ${pkg} failed: ${lastLine(err)}`);
    }
  }
}

function installPypi(tool) {
  const venv = venvDir(tool);
  say(`installing the PyPI package ${tool.package}==${tool.version} into ${venv}`);
  // into a temporary venv renamed into place: a concurrent run never sees a half-installed one
  fs.mkdirSync(toolsDir(), { recursive: true });
  const tmp = fs.mkdtempSync(path.join(toolsDir(), `.${tool.package}-venv-`));
  try {
    execFileSync('python3', ['-m', 'venv', tmp], { stdio: ['ignore', 'pipe', 'pipe'], timeout: 120_000 });
    execFileSync(path.join(tmp, 'bin', 'python'), ['-m', 'pip', 'install', '--quiet', '--disable-pip-version-check', `${tool.package}==${tool.version}`], {
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: 600_000,
    });
  } catch (err) {
    fs.rmSync(tmp, { recursive: true, force: true });
    say(`cannot install ${tool.package} (${lastLine(err)}): ${installHint(tool.command)}`);
    return;
  }
  // the console script's shebang names the temporary path: point it at the final one
  const script = path.join(tmp, 'bin', tool.command);
  fs.writeFileSync(script, fs.readFileSync(script, 'utf8').replace(tmp, venv));
  try {
    fs.renameSync(tmp, venv);
  } catch {
    fs.rmSync(tmp, { recursive: true, force: true }); // a concurrent run was first
  }
}

function main() {
  const missing = TEST_TOOLS.filter((t) => !findTool(t.command));
  const aptPackages = [...new Set(missing.filter((t) => t.source === 'apt').map((t) => t.package))];
  if (aptPackages.length) installApt(aptPackages);
  for (const tool of missing.filter((t) => t.source === 'pypi')) installPypi(tool);
}

main();
