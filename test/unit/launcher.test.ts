/**
 * The process launcher (lib/process/launcher.ts): git runs as a child of the small helper process, not of this one;
 * results, exit codes, stdin and timeouts are those of a direct spawn; a dead helper is replaced; the helper never
 * keeps a finished process alive and carries no environment of its own; a parent killed outright does not leave the
 * process groups or the commands it was running behind.
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { git, gitOrThrow } from '../../lib/git';
import { launcherPid, runProcess, stopLauncher } from '../../lib/process/launcher';
import { groupAlive } from '../../lib/process/processGroup';
import { processAlive } from '../../lib/process/procStat';
import { eventually, makeGitRepo } from '../support/harness';

const env = { PATH: process.env.PATH ?? '/usr/bin:/bin' };
const run = (args: string[], extra: Partial<Parameters<typeof runProcess>[0]> = {}) =>
  runProcess({ file: 'sh', args, cwd: os.tmpdir(), env, timeoutMs: 10_000, maxBuffer: 1 << 20, ...extra });

afterAll(() => stopLauncher());

describe('the process launcher', () => {
  test('git runs as a child of the launcher, with the same output and exit codes as before', async () => {
    const repo = makeGitRepo({ 'a.txt': 'a\n' });
    expect((await gitOrThrow(repo, ['rev-parse', '--abbrev-ref', 'HEAD'])).trim()).toBe('main');
    const pid = launcherPid();
    expect(pid).toBeGreaterThan(0);
    expect(pid).not.toBe(process.pid);
    // the child's parent is the launcher
    expect((await run(['-c', 'echo $PPID'])).stdout.trim()).toBe(String(pid));
    const bad = await git(repo, ['rev-parse', '--verify', 'refs/heads/nope']);
    expect(bad.code).toBe(128);
    expect(bad.stderr).toMatch(/fatal/);
    await expect(gitOrThrow(repo, ['checkout', 'nope'])).rejects.toThrow(/git checkout failed: .*nope/);
  });

  test('stdin, exit codes, stderr, a missing program and the timeout', async () => {
    const repo = makeGitRepo();
    const blob = await git(repo, ['hash-object', '--stdin'], { input: 'hello\n' });
    expect(blob).toEqual({ code: 0, stdout: 'ce013625030ba8dba906f756967f9e9ca394464a\n', stderr: '' });
    expect(await run(['-c', 'echo out; echo err >&2; exit 7'])).toEqual({ code: 7, stdout: 'out\n', stderr: 'err\n' });
    expect((await runProcess({ file: 'no-such-program-armada', args: [], cwd: os.tmpdir(), env, timeoutMs: 5000, maxBuffer: 1024 })).code).toBe(1);
    const t0 = Date.now();
    const slow = await run(['-c', 'sleep 5'], { timeoutMs: 200 });
    expect(slow.code).toBe(1);
    expect(Date.now() - t0).toBeLessThan(4000);
  });

  test('100 commands at once all answer, each with its own output', async () => {
    const out = await Promise.all(Array.from({ length: 100 }, (_, i) => run(['-c', `echo ${i}`])));
    expect(out.map((r) => r.stdout.trim())).toEqual(Array.from({ length: 100 }, (_, i) => String(i)));
  });

  test('a killed launcher fails the command in flight and is replaced for the next one', async () => {
    await run(['-c', 'true']);
    const first = launcherPid() as number;
    const inFlight = run(['-c', 'sleep 3']);
    await new Promise((r) => setTimeout(r, 100));
    process.kill(first, 'SIGKILL');
    await expect(inFlight).rejects.toThrow(/launcher exited/);
    expect((await run(['-c', 'echo again'])).stdout).toBe('again\n');
    expect(launcherPid()).not.toBe(first);
  });

  test('the launcher has no environment of its own: only PATH', async () => {
    await run(['-c', 'true']);
    const environ = fs.readFileSync(`/proc/${launcherPid()}/environ`, 'utf8').split('\0').filter(Boolean);
    expect(environ.map((e) => e.split('=')[0]).filter((k) => !k.startsWith('NODE_CHANNEL_'))).toEqual(['PATH']); // besides Node's IPC plumbing
  });

  test('a process whose last command finished exits (the launcher does not keep it alive), and so does the launcher', () => {
    const repo = makeGitRepo();
    const script = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'armada-launcher-')), 'once.js');
    fs.writeFileSync(
      script,
      `require(${JSON.stringify(require.resolve('tsx/cjs/api'))}).register();
       const { gitOrThrow } = require(${JSON.stringify(path.join(__dirname, '..', '..', 'lib', 'git.ts'))});
       const { launcherPid } = require(${JSON.stringify(path.join(__dirname, '..', '..', 'lib', 'process', 'launcher.ts'))});
       gitOrThrow(${JSON.stringify(repo)}, ['rev-parse', 'HEAD']).then((h) => console.log(launcherPid(), h.trim()));`,
    );
    const t0 = Date.now();
    const r = spawnSync(process.execPath, [script], { encoding: 'utf8', timeout: 20_000 });
    expect({ status: r.status, stderr: r.stderr }).toEqual({ status: 0, stderr: '' });
    expect(Date.now() - t0).toBeLessThan(15_000);
    const [pid, head] = r.stdout.trim().split(' ');
    expect(head).toBe(execFileSync('git', ['rev-parse', 'HEAD'], { cwd: repo, encoding: 'utf8' }).trim());
    // the launcher follows its parent out (it exits on disconnect)
    const deadline = Date.now() + 5000;
    while (fs.existsSync(`/proc/${pid}`) && Date.now() < deadline) spawnSync('sleep', ['0.05']);
    expect(fs.existsSync(`/proc/${pid}`)).toBe(false);
  });

  test('a parent killed outright (SIGKILL): the launcher stops the groups whose leader still runs, and leaves one whose leader exited', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-launcher-'));
    const script = path.join(dir, 'parent.js');
    // `running`: a leader (sh) waiting on a child in its group, as an agent mid-run; `kept`: a leader that exited and
    // left a child in its group on purpose (a setup script's service, leftovers 'keep')
    fs.writeFileSync(
      script,
      `require(${JSON.stringify(require.resolve('tsx/cjs/api'))}).register();
       const { launchGroupProcess } = require(${JSON.stringify(path.join(__dirname, '..', '..', 'lib', 'process', 'processGroup.ts'))});
       const { launcherPid } = require(${JSON.stringify(path.join(__dirname, '..', '..', 'lib', 'process', 'launcher.ts'))});
       (async () => {
         const opts = { cwd: ${JSON.stringify(dir)}, env: { PATH: process.env.PATH }, graceMs: 1000 };
         const running = await launchGroupProcess({ ...opts, command: 'sh', args: ['-c', 'sleep 300 & wait'] });
         const kept = await launchGroupProcess({ ...opts, command: 'sh', args: ['-c', 'sleep 300 & echo left'], leftovers: 'keep' });
         await kept.done;
         console.log(JSON.stringify({ launcher: launcherPid(), running: running.pid, kept: kept.pid }));
         setInterval(() => undefined, 1000);
       })();`,
    );
    const parent = spawn(process.execPath, [script], { stdio: ['ignore', 'pipe', 'inherit'] });
    const groups: number[] = [];
    try {
      const line = await new Promise<string>((resolve, reject) => {
        let out = '';
        parent.stdout?.on('data', (d) => {
          out += d;
          if (out.includes('\n')) resolve(out.trim());
        });
        parent.once('exit', (code) => reject(new Error(`parent exited ${code}`)));
      });
      const pids = JSON.parse(line) as { launcher: number; running: number; kept: number };
      groups.push(pids.running, pids.kept);
      expect(groupAlive(pids.running)).toBe(true);
      expect(groupAlive(pids.kept)).toBe(true);
      parent.kill('SIGKILL');
      await eventually(async () => !groupAlive(pids.running) && !fs.existsSync(`/proc/${pids.launcher}`), 10_000, 50);
      expect(groupAlive(pids.kept)).toBe(true);
    } finally {
      parent.kill('SIGKILL');
      for (const g of groups) {
        try {
          process.kill(-g, 'SIGKILL');
        } catch {
          /* gone */
        }
      }
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  test('a parent killed outright (SIGKILL) while a command runs: the launcher stops the command and its children, SIGKILL for one ignoring SIGTERM', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-launcher-'));
    const script = path.join(dir, 'parent.js');
    // a command run to completion (as `git clone` is), with a child of its own (as git's helpers are); the second
    // ignores SIGTERM, as its child does
    fs.writeFileSync(
      script,
      `require(${JSON.stringify(require.resolve('tsx/cjs/api'))}).register();
       const { launcherPid, runProcess } = require(${JSON.stringify(path.join(__dirname, '..', '..', 'lib', 'process', 'launcher.ts'))});
       const req = (name, prefix) => ({ file: 'sh', args: ['-c', prefix + 'echo $$ > ' + name + '.sh; sleep 300 & echo $! > ' + name + '.child; wait'], cwd: ${JSON.stringify(dir)}, env: { PATH: process.env.PATH }, timeoutMs: 600000, maxBuffer: 1024 });
       void runProcess(req('plain', ''));
       void runProcess(req('stubborn', "trap '' TERM; "));
       const fs = require('node:fs');
       const ready = setInterval(() => {
         if (!['plain.child', 'stubborn.child'].every((f) => fs.existsSync(${JSON.stringify(dir)} + '/' + f))) return;
         clearInterval(ready);
         console.log(JSON.stringify({ launcher: launcherPid() }));
         setInterval(() => undefined, 1000);
       }, 20);`,
    );
    const parent = spawn(process.execPath, [script], { stdio: ['ignore', 'pipe', 'inherit'] });
    const pids: number[] = [];
    try {
      const line = await new Promise<string>((resolve, reject) => {
        let out = '';
        parent.stdout?.on('data', (d) => {
          out += d;
          if (out.includes('\n')) resolve(out.trim());
        });
        parent.once('exit', (code) => reject(new Error(`parent exited ${code}`)));
      });
      const { launcher } = JSON.parse(line) as { launcher: number };
      await eventually(async () => ['plain', 'stubborn'].every((n) => fs.readFileSync(path.join(dir, `${n}.child`), 'utf8').trim()), 5000, 20);
      for (const f of ['plain.sh', 'plain.child', 'stubborn.sh', 'stubborn.child']) pids.push(Number(fs.readFileSync(path.join(dir, f), 'utf8')));
      expect(pids.every((pid) => processAlive(pid))).toBe(true);
      parent.kill('SIGKILL');
      await eventually(async () => !pids.some((pid) => processAlive(pid)) && !fs.existsSync(`/proc/${launcher}`), 10_000, 50);
    } finally {
      parent.kill('SIGKILL');
      for (const p of pids) {
        try {
          process.kill(p, 'SIGKILL');
        } catch {
          /* gone */
        }
      }
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  test('ARMADA_LAUNCHER=off spawns in this process', async () => {
    process.env.ARMADA_LAUNCHER = 'off';
    try {
      expect((await run(['-c', 'echo $PPID'])).stdout.trim()).toBe(String(process.pid));
    } finally {
      delete process.env.ARMADA_LAUNCHER;
    }
  });
});
