/**
 * `armada start` as a user runs it: a real process with embedded PostgreSQL and a Temporal dev server in a fresh
 * ARMADA_HOME. Checks every port answers /health, Ctrl-C (SIGINT) leaves no process behind, and a second start
 * keeps the data of the first. Its stdout is a pipe, so its banner is a JSON line that never holds the API key.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { ArmadaStatus } from '../../cli/status';
import { ARMADA_BIN } from '../support/armadaProcess';
import { eventually, makeGitRepo } from '../support/harness';
import { processesUsing } from '../support/processes';
import { ctrlC, readyLine, startArmada, type RunningArmada, type StartPorts } from '../support/armadaStart';

jest.setTimeout(300_000);

let home: string;
let ports: StartPorts | undefined;
let last: RunningArmada | undefined;

beforeAll(() => {
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-start-'));
});
afterAll(async () => {
  // a failed expectation must not leave armada and its servers running
  if (last && last.child.exitCode === null && last.child.signalCode === null) await ctrlC(last);
  fs.rmSync(home, { recursive: true, force: true });
});

/** `armada start` on the same home (and, for the second start, the same ports as the first). */
async function start(env: NodeJS.ProcessEnv = {}): Promise<RunningArmada> {
  const armada = await startArmada(home, env, ports);
  ports = armada.ports;
  last = armada;
  return armada;
}

test('npm start brings every service up; Ctrl-C leaves nothing running; a second start keeps the data', async () => {
  const t0 = Date.now();
  const missingConfig = path.join(home, 'no-such-config.json');
  const first = await start({ ARMADA_LOG_LEVEL: 'info', ARMADA_CONFIG: missingConfig });
  const startupSeconds = (Date.now() - t0) / 1000;
  const p = first.ports;
  // stdout is a pipe: the banner is one JSON line with the addresses, naming the key's file and never the key
  const apiKey = fs.readFileSync(path.join(home, 'api-key'), 'utf8').trim();
  expect(readyLine(first.output())).toMatchObject({
    level: 30,
    event: 'ready',
    home,
    addresses: {
      task: `http://127.0.0.1:${p.task}`,
      scheduler: `http://127.0.0.1:${p.scheduler}`,
      'scheduler-alt': `http://127.0.0.1:${p.schedulerAlt}`,
      agents: `http://127.0.0.1:${p.agents}`,
      traces: `http://127.0.0.1:${p.traces}`,
    },
    apiKeyFile: path.join(home, 'api-key'),
    apiKeyGenerated: true,
  });
  expect(first.output()).not.toContain(apiKey);
  // a misspelled ARMADA_CONFIG starts with the defaults, as documented, but says so in one warning line
  const configWarnings = first.output().split('\n').filter((l) => l.includes(missingConfig));
  expect(configWarnings).toHaveLength(1);
  expect(JSON.parse(configWarnings[0] as string)).toMatchObject({ level: 40, configPath: missingConfig });
  expect(first.output()).not.toMatch(/Press Ctrl-C|is up in/);
  for (const port of [p.task, p.scheduler, p.schedulerAlt, p.agents, p.traces]) {
    const r = await fetch(`http://127.0.0.1:${port}/health`);
    expect(r.status).toBe(200);
  }
  // started as `npm start` starts it (bin/armada through its first line): node runs with that line's flags
  const cmdline = fs.readFileSync(`/proc/${first.child.pid}/cmdline`, 'utf8').split('\0');
  expect(cmdline.slice(0, 3)).toEqual([expect.stringMatching(/(^|\/)node$/), '--max-semi-space-size=64', expect.stringMatching(/bin\/armada$/)]);
  // armada status on this home: running, by this armada, every service its own
  const env = {
    ...process.env,
    ARMADA_HOME: home,
    ARMADA_CONFIG: '',
    DATABASE_URL: '',
    TEMPORAL_ADDRESS: '',
    ARMADA_TASK_PORT: String(p.task),
    ARMADA_SCHEDULER_PORT: String(p.scheduler),
    ARMADA_SCHEDULER_ALT_PORT: String(p.schedulerAlt),
    ARMADA_AGENTS_PORT: String(p.agents),
    ARMADA_TRACES_PORT: String(p.traces),
    ARMADA_PG_PORT: String(p.pg),
    ARMADA_TEMPORAL_PORT: String(p.temporal),
  };
  const status = JSON.parse(execFileSync(process.execPath, [ARMADA_BIN, 'status', '--json'], { env, encoding: 'utf8', timeout: 60_000 })) as ArmadaStatus;
  expect([status.running, status.armadaPid]).toEqual([true, first.child.pid]);
  expect(status.services.map((s) => `${s.name}:${s.state}`)).toEqual(['task:up', 'scheduler:up', 'scheduler-alt:up', 'agents:up', 'traces:up']);
  // and on another home with the same ports: stopped, the services named as this home's
  const elsewhere = JSON.parse(execFileSync(process.execPath, [ARMADA_BIN, 'status', '--json'], { env: { ...env, ARMADA_HOME: path.join(home, 'nonexistent') }, encoding: 'utf8', timeout: 60_000 })) as ArmadaStatus;
  expect(elsewhere.running).toBe(false);
  expect(elsewhere.services.map((s) => [s.name, s.state, s.owner])).toEqual(status.services.map((s) => [s.name, 'other', { pid: first.child.pid, home }]));
  expect((await fetch(`http://127.0.0.1:${p.scheduler}/api/v1/x`)).status).toBe(401);
  expect((await fetch(`http://127.0.0.1:${p.scheduler}/api/v1/x`, { headers: { 'x-api-key': apiKey } })).status).toBe(404);

  // the scheduler answers on two ports from one process: its background work (the maintenance schedule) is set up once
  const setUpLines = () => first.output().split('\n').filter((l) => l.includes('"msg":"maintenance schedule set up"'));
  await eventually(async () => setUpLines().length > 0, 30_000);
  await new Promise((r) => setTimeout(r, 1000)); // a second one would have come by now (they came 70 ms apart)
  expect(setUpLines()).toHaveLength(1);
  // and the second port serves the same API as the first
  expect((await fetch(`http://127.0.0.1:${p.schedulerAlt}/api/v1/workflows`, { headers: { 'x-api-key': apiKey } })).status).toBe(200);

  const repo = makeGitRepo();
  const created = await fetch(`http://127.0.0.1:${p.task}/api/projects`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'Survives restarts', repository: { url: repo } }),
  });
  expect(created.status).toBe(201);
  const projectId = ((await created.json()) as { data: { id: string } }).data.id;

  expect(await ctrlC(first)).toBe(0);
  expect(first.output()).toMatch(/^\{.*"event":"stopped".*\}$/m);
  expect(first.output()).not.toMatch(/^armada stopped$/m);
  await new Promise((r) => setTimeout(r, 500));
  expect(processesUsing(home)).toEqual([]);

  const second = await start();
  expect(readyLine(second.output())).toMatchObject({ event: 'ready', apiKeyFile: path.join(home, 'api-key'), apiKeyGenerated: false }); // kept
  const again = await fetch(`http://127.0.0.1:${second.ports.task}/api/projects/${projectId}`);
  expect(again.status).toBe(200);
  expect(((await again.json()) as { data: { name: string } }).data.name).toBe('Survives restarts');
  expect(await ctrlC(second)).toBe(0);
  await new Promise((r) => setTimeout(r, 500));
  expect(processesUsing(home)).toEqual([]);
  // the figure is printed for the record; the 60 s budget is checked on an unloaded machine, not asserted here
  process.stdout.write(`armada start came up in ${startupSeconds.toFixed(1)} s\n`);
});
