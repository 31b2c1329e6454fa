/**
 * Provisions the schemathesis CLI for the contract test: a private venv under $ARMADA_TOOLS_DIR (default
 * ~/.armada/tools), pinned version, reused while it answers with that version.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export const SCHEMATHESIS_VERSION = '4.32.5';

function toolsDir(): string {
  return process.env.ARMADA_TOOLS_DIR || path.join(os.homedir(), '.armada', 'tools');
}

function installedVersion(st: string): string | undefined {
  if (!fs.existsSync(st)) return undefined;
  const r = spawnSync(st, ['--version'], { encoding: 'utf8', timeout: 60_000 });
  return /(\d+\.\d+\.\d+)/.exec(`${r.stdout}${r.stderr}`)?.[1];
}

/** Path of the `st` executable of the pinned schemathesis; installs it on first use (one progress line). */
export function ensureSchemathesis(): string {
  const venv = path.join(toolsDir(), 'schemathesis-venv');
  const st = path.join(venv, 'bin', 'st');
  if (installedVersion(st) === SCHEMATHESIS_VERSION) return st;
  const python = process.env.PYTHON || 'python3';
  const probe = spawnSync(python, ['-c', 'import venv, ensurepip'], { encoding: 'utf8' });
  if (probe.error || probe.status !== 0) {
    throw new Error(`the contract test needs ${python} with venv and ensurepip: install python3 and python3-venv (Debian: apt-get install python3 python3-venv)`);
  }
  process.stderr.write(`contract: installing schemathesis ${SCHEMATHESIS_VERSION} into ${venv}\n`);
  fs.rmSync(venv, { recursive: true, force: true });
  fs.mkdirSync(path.dirname(venv), { recursive: true });
  execFileSync(python, ['-m', 'venv', venv], { stdio: 'pipe' });
  execFileSync(path.join(venv, 'bin', 'pip'), ['install', '--quiet', '--disable-pip-version-check', `schemathesis==${SCHEMATHESIS_VERSION}`], { stdio: 'pipe', timeout: 600_000 });
  const got = installedVersion(st);
  if (got !== SCHEMATHESIS_VERSION) throw new Error(`schemathesis ${SCHEMATHESIS_VERSION} did not install into ${venv} (found ${got ?? 'nothing'})`);
  return st;
}
