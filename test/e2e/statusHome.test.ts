/**
 * `armada status` decides by the home's own processes, not by whatever answers on the configured ports: a service
 * of an armada running on another ARMADA_HOME is reported as that home's, and this home as stopped. It prints JSON
 * for machines (stdout not a terminal, or --json) and text on a terminal, as `armada migrate` does.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { ArmadaStatus } from '../../cli/status';
import { ARMADA_BIN } from '../support/armadaProcess';
import { startUnansweringTemporal } from '../support/unansweringTemporal';
const { freePort } = require('../support/ports') as { freePort(): Promise<number> };

jest.setTimeout(120_000);

let dir: string;
let otherHome: string;
let port: number;
let service: ChildProcess;

/** A process started as `armada` with ARMADA_HOME=home, serving /health on `port` like an armada service does. */
function fakeArmadaService(home: string, listenPort: number): Promise<ChildProcess> {
  const script = path.join(dir, 'armada');
  fs.writeFileSync(
    script,
    `require('node:http').createServer((req, res) => { res.setHeader('content-type', 'application/json'); res.end('{"status":"ok"}'); })` +
      `.listen(${listenPort}, '127.0.0.1', () => process.stdout.write('listening\\n'));`,
  );
  const child = spawn(process.execPath, [script], { env: { ...process.env, ARMADA_HOME: home }, stdio: ['ignore', 'pipe', 'inherit'] });
  return new Promise((resolve, reject) => {
    child.stdout?.once('data', () => resolve(child));
    child.once('exit', (code) => reject(new Error(`the fake service exited with ${code}`)));
  });
}

function status(home: string, extraEnv: NodeJS.ProcessEnv = {}): Promise<ArmadaStatus> {
  return statusRun(home, extraEnv).then((r) => JSON.parse(r.stdout));
}

function statusEnv(home: string, extraEnv: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    ARMADA_HOME: home,
    ARMADA_CONFIG: '',
    DATABASE_URL: '',
    TEMPORAL_ADDRESS: '',
    ARMADA_HOST: '127.0.0.1',
    ARMADA_TASK_PORT: String(port),
    // the other services' ports: closed
    ARMADA_SCHEDULER_PORT: '1',
    ARMADA_SCHEDULER_ALT_PORT: '',
    ARMADA_AGENTS_PORT: '2',
    ARMADA_TRACES_PORT: '3',
    ...extraEnv,
  };
  if (!('ARMADA_LOG_FORMAT' in extraEnv)) delete env.ARMADA_LOG_FORMAT;
  return env;
}

function statusRun(home: string, extraEnv: NodeJS.ProcessEnv = {}, args = ['--json']): Promise<{ stdout: string; stderr: string }> {
  const env = statusEnv(home, extraEnv);
  return new Promise((resolve, reject) => {
    execFile(process.execPath, [ARMADA_BIN, 'status', ...args], { env, timeout: 60_000 }, (err, stdout, stderr) => (err ? reject(err) : resolve({ stdout, stderr })));
  });
}

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-status-home-'));
  otherHome = path.join(dir, 'other-home');
  fs.mkdirSync(otherHome);
  port = await freePort();
  service = await fakeArmadaService(otherHome, port);
});
afterAll(() => {
  service?.kill('SIGKILL');
  fs.rmSync(dir, { recursive: true, force: true });
});

test("a home with nothing of its own running is stopped, and the other home's service on its port is named as such", async () => {
  const s = await status(path.join(dir, 'nonexistent'));
  expect(s.running).toBe(false);
  expect(s.armadaPid).toBeUndefined();
  expect(s.services.find((x) => x.name === 'task')).toMatchObject({ state: 'other', owner: { pid: service.pid, home: otherHome } });
  expect(s.services.filter((x) => x.name !== 'task').every((x) => x.state === 'down')).toBe(true);
});

test('the home whose armada serves the port is running, its service up', async () => {
  const s = await status(otherHome);
  expect(s.running).toBe(true);
  expect(s.armadaPid).toBe(service.pid);
  expect(s.services.find((x) => x.name === 'task')).toMatchObject({ state: 'up' });
});

test('an ARMADA_CONFIG naming a file that does not exist: one warning line naming it, then the defaults', async () => {
  const missing = path.join(dir, 'armada-confg.json');
  const r = await statusRun(otherHome, { ARMADA_CONFIG: missing });
  expect(r.stderr).toBe(`armada: warning: ARMADA_CONFIG names ${missing}, which does not exist; going on with the defaults (docs/configuration.md)\n`);
  expect(JSON.parse(r.stdout)).toMatchObject({ home: otherHome, running: true });
  // the default path missing is the documented normal case: no warning
  expect((await statusRun(otherHome)).stderr).toBe('');
});

test('piped (a script, a monitoring check) it prints the JSON object without --json; on a terminal, text', async () => {
  const piped = await statusRun(otherHome, {}, []);
  expect(piped.stderr).toBe('');
  expect(JSON.parse(piped.stdout)).toMatchObject({ home: otherHome, running: true, armadaPid: service.pid });
  // ARMADA_LOG_FORMAT=pretty asks for text on a pipe, as for armada migrate and the logs; --json wins over it
  expect((await statusRun(otherHome, { ARMADA_LOG_FORMAT: 'pretty' }, [])).stdout).toMatch(new RegExp(`^armada on ${otherHome}: running \\(pid ${service.pid}\\)\n`));
  expect(JSON.parse((await statusRun(otherHome, { ARMADA_LOG_FORMAT: 'pretty' })).stdout)).toMatchObject({ home: otherHome, running: true });
  // a terminal (util-linux's script, as in test/e2e/migrateOutput.test.ts): text
  const child = spawn('script', ['-qfec', `exec ${JSON.stringify(process.execPath)} ${JSON.stringify(ARMADA_BIN)} status`, '/dev/null'], { env: statusEnv(otherHome), stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout?.on('data', (d) => (out += d.toString()));
  child.stderr?.on('data', (d) => (out += d.toString()));
  const code = await new Promise((resolve) => child.once('exit', resolve));
  expect(code).toBe(0);
  expect(out.replace(/\r\n/g, '\n')).toMatch(new RegExp(`^armada on ${otherHome}: running \\(pid ${service.pid}\\)\n {2}services\n`));
});

test('an external Temporal that is up but does not answer (GetSystemInfo only): status still ends, its worker queues unknown', async () => {
  const temporal = await startUnansweringTemporal();
  try {
    const address = temporal.address;
    const t0 = Date.now();
    const s = await status(otherHome, { TEMPORAL_ADDRESS: address });
    expect(Date.now() - t0).toBeLessThan(30_000);
    expect(s.temporal).toMatchObject({ mode: 'external', address });
    expect(s.workerQueues.length).toBeGreaterThan(0);
    for (const q of s.workerQueues) expect(q.pollers).toBeNull();
  } finally {
    await temporal.close();
  }
});
