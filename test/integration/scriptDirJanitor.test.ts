/**
 * The temp dir of a scheduler script whose worker was killed outright (SIGKILL) is left behind; the next worker that
 * starts on the host removes it (activities/scheduler/scriptDirs.ts), and never the dir of a process still alive.
 * Workers run as their own processes (`armada worker`), in this run's TMPDIR, which they inherit.
 *
 * Before: nothing removed them; every kill -9 of a worker during script runs left /tmp/armada-script-* dirs for good.
 */
import { spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { eventually, startTestStack, type TestStack } from '../support/harness';
import { spawnStackWorker } from '../support/workerProcess';
import { closeSchedulerStack, schedulerInject } from '../support/schedulerStack';

jest.setTimeout(240_000);

let stack: TestStack;
let marks: string;
const workers: ChildProcess[] = [];
const groups: number[] = [];
const made: string[] = [];

beforeAll(async () => {
  stack = await startTestStack({ services: ['scheduler'], file: { scheduler: { healthCheckIntervalSeconds: 0 } } });
  marks = fs.mkdtempSync(path.join(os.tmpdir(), 'janitor-marks-'));
});
afterAll(async () => {
  for (const w of workers) if (w.exitCode === null && w.signalCode === null) w.kill('SIGKILL');
  for (const g of groups) {
    try {
      process.kill(-g, 'SIGKILL');
    } catch {
      /* gone */
    }
  }
  for (const d of [...made, marks]) if (d) fs.rmSync(d, { recursive: true, force: true });
  if (stack) await closeSchedulerStack(stack);
});

async function startWorkerProcess(): Promise<ChildProcess> {
  const child = await spawnStackWorker(stack, { readyTimeoutMs: 120_000 });
  workers.push(child);
  return child;
}

/** A dir in the temp dir, as a script's would be; `ageMs` back-dates it. */
function scriptLikeDir(name: string | null, ageMs = 0): string {
  const dir = name ? path.join(os.tmpdir(), name) : fs.mkdtempSync(path.join(os.tmpdir(), 'armada-script-'));
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, 'left.txt'), 'x');
  if (ageMs) {
    const then = new Date(Date.now() - ageMs);
    fs.utimesSync(dir, then, then);
  }
  made.push(dir);
  return dir;
}

test('a worker killed (SIGKILL) while its script runs leaves the temp dir; the next worker to start removes it, and none of a live process', async () => {
  const inject = schedulerInject(stack);
  const first = await startWorkerProcess();
  const pidFile = path.join(marks, 'script.pid');
  const dirFile = path.join(marks, 'script.dir');
  const created = await inject('POST', '/api/v1/workflows', { name: 'lost-script', tasks: [{ name: 's1', type: 'script', script: `echo $$ > ${pidFile}; pwd > ${dirFile}; sleep 300` }] });
  expect(created.statusCode).toBe(201);
  expect((await inject('POST', '/api/v1/workflows/lost-script/run')).statusCode).toBe(200);
  const dir = await eventually(async () => fs.existsSync(dirFile) && fs.readFileSync(dirFile, 'utf8').trim(), 60_000, 50);
  groups.push(await eventually(async () => fs.existsSync(pidFile) && Number(fs.readFileSync(pidFile, 'utf8').trim()), 10_000, 50));
  expect(fs.realpathSync(path.dirname(dir))).toBe(fs.realpathSync(os.tmpdir()));
  first.kill('SIGKILL');
  await new Promise((r) => first.once('exit', r));
  expect(fs.existsSync(dir)).toBe(true); // left behind: nothing removes it when the worker is killed

  // what must stay: a dir named after a live process (this test's), and a recent one named the old way
  const ofLiveProcess = scriptLikeDir(`armada-script-p${process.pid}_0_live01`);
  const recentLegacy = scriptLikeDir(null);
  // what goes too: one of a process that has ended, and an old one named the old way (older than any script runs)
  const ended = spawnSync('true').pid;
  const ofEndedProcess = scriptLikeDir(`armada-script-p${ended}_0_ended1`);
  const oldLegacy = scriptLikeDir(null, 26 * 3600_000);

  await startWorkerProcess();
  await eventually(async () => !fs.existsSync(dir), 60_000, 100);
  expect(fs.existsSync(ofEndedProcess)).toBe(false);
  expect(fs.existsSync(oldLegacy)).toBe(false);
  expect(fs.existsSync(ofLiveProcess)).toBe(true);
  expect(fs.existsSync(recentLegacy)).toBe(true);
});
