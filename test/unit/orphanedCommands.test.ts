/**
 * Commands run to completion (`runProcess`, as git is) that outlive their process: with `ARMADA_LAUNCHER=off` they
 * are the worker's own children, and a worker killed with -9 left them running (a `git clone` went on into the
 * directory its activity's retry clones into). Each carries its owner (`ARMADA_COMMAND_OWNER=<pid>:<start time>`),
 * and `stopOrphanedCommands` (run at a worker's start and before a clone) stops those whose owner is gone, children
 * included, SIGKILL for one ignoring SIGTERM; the commands of a live owner, and of a process that only has a dead
 * owner's pid, are left alone (lib/process/orphans.ts).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { OWNER_VARIABLE, ownerMark, processStartTime, stopOrphanedCommands } from '../../lib/process/orphans';
import { makeScriptDir } from '../../activities/scheduler/scriptDirs';
import { eventually } from '../support/harness';

jest.setTimeout(60_000);

const alive = (pid: number) => processStartTime(pid) !== undefined;

let dir: string;
const started: ChildProcess[] = [];
const pids: number[] = [];

beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-orphans-'));
});
afterEach(() => {
  for (const c of started) c.kill('SIGKILL');
  for (const p of pids) {
    try {
      process.kill(p, 'SIGKILL');
    } catch {
      /* gone */
    }
  }
  started.length = 0;
  pids.length = 0;
  fs.rmSync(dir, { recursive: true, force: true });
});

/**
 * A node process that runs two commands through runProcess with the launcher off (one with a child of its own, as git
 * has; one, with its child, ignoring SIGTERM), and prints its pid once they run; the pids they wrote, by name.
 */
async function parentRunningCommands(name: string): Promise<{ parent: ChildProcess; commands: number[] }> {
  const script = path.join(dir, `${name}.js`);
  fs.writeFileSync(
    script,
    `process.env.ARMADA_LAUNCHER = 'off';
     require(${JSON.stringify(require.resolve('tsx/cjs/api'))}).register();
     const { runProcess } = require(${JSON.stringify(path.join(__dirname, '..', '..', 'lib', 'process', 'launcher.ts'))});
     const fs = require('node:fs');
     const at = (f) => ${JSON.stringify(dir)} + '/${name}-' + f;
     const req = (n, prefix) => ({ file: 'sh', args: ['-c', prefix + 'echo $$ > ' + at(n + '.sh') + '; sleep 300 & echo $! > ' + at(n + '.child') + '; wait'], cwd: ${JSON.stringify(dir)}, env: { PATH: process.env.PATH }, timeoutMs: 600000, maxBuffer: 1024 });
     void runProcess(req('plain', ''));
     void runProcess(req('stubborn', "trap '' TERM; "));
     const ready = setInterval(() => {
       if (!['plain.child', 'stubborn.child'].every((f) => fs.existsSync(at(f)) && fs.readFileSync(at(f), 'utf8').trim())) return;
       clearInterval(ready);
       console.log('ready');
       setInterval(() => undefined, 1000);
     }, 20);`,
  );
  const parent = spawn(process.execPath, [script], { stdio: ['ignore', 'pipe', 'inherit'] });
  started.push(parent);
  await new Promise<void>((resolve, reject) => {
    parent.stdout?.on('data', (d) => String(d).includes('ready') && resolve());
    parent.once('exit', (code) => reject(new Error(`${name} exited ${code}`)));
  });
  const commands = ['plain.sh', 'plain.child', 'stubborn.sh', 'stubborn.child'].map((f) => Number(fs.readFileSync(path.join(dir, `${name}-${f}`), 'utf8')));
  pids.push(...commands);
  return { parent, commands };
}

test('ARMADA_LAUNCHER=off, the parent killed with -9: its commands run on; stopOrphanedCommands stops them and their children, and leaves a live owner\'s', async () => {
  const killed = await parentRunningCommands('killed');
  const living = await parentRunningCommands('living');
  // each command carries its owner, the parent, by pid and start time
  const environ = fs.readFileSync(`/proc/${killed.commands[0]}/environ`, 'utf8').split('\0');
  expect(environ).toContain(`${OWNER_VARIABLE}=${killed.parent.pid}:${processStartTime(killed.parent.pid as number)}`);

  const exited = new Promise((r) => killed.parent.once('exit', r));
  killed.parent.kill('SIGKILL');
  await exited;
  // nothing stops them without the launcher (a worker that another test file starts meanwhile may: they are orphans)
  const stopped = await stopOrphanedCommands(1000);
  await eventually(async () => !killed.commands.some(alive), 5000, 50);
  // the living parent's commands run on, and so does it
  expect(living.commands.map(alive)).toEqual([true, true, true, true]);
  expect(alive(living.parent.pid as number)).toBe(true);
  for (const p of living.commands) expect(stopped).not.toContain(p);
});

test('an owner is told by its pid and start time: a process with the pid of a dead owner is no owner, and this process is one', async () => {
  const start = processStartTime(process.pid) as string;
  const sleeper = (owner: string) => {
    const c = spawn('sleep', ['300'], { env: { PATH: process.env.PATH, [OWNER_VARIABLE]: owner }, stdio: 'ignore' });
    started.push(c);
    return c.pid as number;
  };
  // a live pid (this process) that started at another time: its owner is gone, the pid was given to another since
  const reused = sleeper(`${process.pid}:${Number(start) + 1}`);
  const own = sleeper(ownerMark());
  // a live owner other than this process, at its start time
  const other = spawn('sleep', ['300'], { stdio: 'ignore' });
  started.push(other);
  await eventually(async () => processStartTime(other.pid as number) !== undefined, 5000, 20);
  const ofOther = sleeper(`${other.pid}:${processStartTime(other.pid as number)}`);
  await eventually(async () => [reused, own, ofOther].every((p) => fs.readFileSync(`/proc/${p}/environ`, 'utf8').includes(OWNER_VARIABLE)), 5000, 20);

  const stopped = await stopOrphanedCommands(1000);
  expect(stopped).not.toContain(own);
  expect(stopped).not.toContain(ofOther);
  await eventually(async () => !alive(reused), 5000, 50);
  expect([alive(own), alive(ofOther), alive(other.pid as number)]).toEqual([true, true, true]);
});

test("this process's owner mark and the names of its scheduler scripts' temp dirs carry one identity: its pid and start time", () => {
  const start = processStartTime(process.pid) as string;
  expect(ownerMark()).toBe(`${process.pid}:${start}`);
  const scriptDir = makeScriptDir();
  try {
    expect(path.basename(scriptDir)).toMatch(new RegExp(`^armada-script-p${process.pid}_${start}_[A-Za-z0-9]+$`));
  } finally {
    fs.rmSync(scriptDir, { recursive: true, force: true });
  }
});
