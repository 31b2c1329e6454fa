import fs from 'node:fs';
import os from 'node:os';
import { childEnv } from '../../lib/process/childEnv';
import { launcherPid, stopLauncher } from '../../lib/process/launcher';
import { type GroupProcess, type GroupProcessOptions, groupAlive, killProcessesUnder, launchGroupProcess, startGroupProcess } from '../../lib/process/processGroup';

const cwd = os.tmpdir();
afterAll(() => stopLauncher());

// the same behaviour whether the group is forked from here or started by the process launcher
describe.each([
  ['startGroupProcess', async (o: GroupProcessOptions): Promise<GroupProcess> => startGroupProcess(o)],
  ['launchGroupProcess', launchGroupProcess],
])('%s', (_name, start) => {
  test('gets stdin, reports lines from both streams and the exit code', async () => {
    const lines: string[] = [];
    const p = await start({
      command: 'bash',
      args: ['-c', 'read x; echo "got $x"; echo oops >&2; exit 3'],
      cwd,
      stdin: 'hello\n',
      onLine: (s, l) => lines.push(`${s}:${l}`),
    });
    const r = await p.done;
    expect(r.code).toBe(3);
    expect(lines).toEqual(expect.arrayContaining(['stdout:got hello', 'stderr:oops']));
  });

  test('bash reads no ~/.bashrc, as from a terminal: stdin is /dev/null without input, and childEnv sets SHLVL for a piped one', async () => {
    const home = fs.mkdtempSync(`${os.tmpdir()}/armada-home-`);
    fs.writeFileSync(`${home}/.bashrc`, 'export BASHRC_READ=yes\n');
    try {
      for (const stdin of [undefined, 'input\n']) {
        const lines: string[] = [];
        const p = await start({
          command: 'bash',
          // biome-ignore lint/suspicious/noTemplateCurlyInString: a bash parameter expansion
          args: ['-c', 'echo "bashrc:${BASHRC_READ:-no} stdin:$(readlink /proc/self/fd/0)"'],
          cwd,
          env: childEnv({ base: { PATH: process.env.PATH, HOME: home } }),
          stdin,
          onLine: (_s, l) => lines.push(l),
        });
        expect((await p.done).code).toBe(0);
        expect(lines).toEqual([expect.stringMatching(stdin === undefined ? /^bashrc:no stdin:\/dev\/null$/ : /^bashrc:no stdin:socket:/)]);
      }
    } finally {
      fs.rmSync(home, { recursive: true, force: true });
    }
  });

  test("nice lowers the group's CPU priority: the leader's and its children's nice value, and its session's autogroup", async () => {
    const read = async (nice?: number) => {
      const lines: string[] = [];
      // the priority is set right after the spawn: the script reads it a moment later
      const script = `sleep 0.3; cut -d' ' -f19 /proc/$$/stat; bash -c 'cut -d" " -f19 /proc/$$/stat'; cat /proc/$$/autogroup 2>/dev/null || echo none`;
      const p = await start({ command: 'bash', args: ['-c', script], cwd, nice, onLine: (_s, l) => lines.push(l) });
      expect((await p.done).code).toBe(0);
      return lines;
    };
    const [leader, child, autogroup] = await read(10);
    expect([leader, child]).toEqual(['10', '10']);
    if (fs.existsSync('/proc/self/autogroup')) expect(autogroup).toMatch(/ nice 10$/);
    const [plain, , plainGroup] = await read(undefined);
    expect(plain).toBe(String(os.getPriority()));
    if (fs.existsSync('/proc/self/autogroup')) expect(plainGroup).toMatch(/ nice 0$/);
  });

  test('abort stops the whole group, grandchildren included', async () => {
    const ac = new AbortController();
    const p = await start({ command: 'bash', args: ['-c', 'sleep 60 & sleep 60; wait'], cwd, signal: ac.signal, graceMs: 500 });
    await new Promise((r) => setTimeout(r, 300));
    expect(groupAlive(p.pid)).toBe(true);
    const t0 = Date.now();
    ac.abort();
    const r = await p.done;
    expect(r.aborted).toBe(true);
    expect(Date.now() - t0).toBeLessThan(5000);
    await new Promise((r) => setTimeout(r, 200));
    expect(groupAlive(p.pid)).toBe(false);
  });

  test('what the leader leaves running in its group is stopped when it exits (SIGKILL for one ignoring SIGTERM), unless leftovers is keep', async () => {
    // a background child that outlives its shell, one that ignores SIGTERM, and one that let go of the pipes
    const script = 'sleep 60 & (trap "" TERM; sleep 60) & (sleep 60 >/dev/null 2>&1 &); sleep 0.2; echo left; exit 0';
    const p = await start({ command: 'bash', args: ['-c', script], cwd, graceMs: 300 });
    const r = await p.done;
    expect(r).toMatchObject({ code: 0, aborted: false, timedOut: false });
    expect(r.leftoversEnded).toBeGreaterThanOrEqual(3); // the trapping subshell may count with its sleep
    expect(groupAlive(p.pid)).toBe(false);
    // kept: the run ends, its background process stays until the caller stops it
    const kept = await start({ command: 'bash', args: ['-c', '(sleep 60 >/dev/null 2>&1 &); exit 0'], cwd, leftovers: 'keep' });
    expect(await kept.done).toMatchObject({ code: 0, leftoversEnded: 0 });
    expect(groupAlive(kept.pid)).toBe(true);
    process.kill(-kept.pid, 'SIGKILL');
    // nothing left: nothing to stop, and no wait
    const t0 = Date.now();
    expect(await (await start({ command: 'true', cwd, graceMs: 5000 })).done).toMatchObject({ code: 0, leftoversEnded: 0 });
    expect(Date.now() - t0).toBeLessThan(4000);
  });

  test('a process ignoring SIGTERM is killed after the grace period; timeout is reported', async () => {
    const p = await start({ command: 'bash', args: ['-c', 'trap "" TERM; sleep 30'], cwd, timeoutMs: 200, graceMs: 300 });
    const r = await p.done;
    expect(r.timedOut).toBe(true);
    expect(r.signal).toBe('SIGKILL');
  });

  test('a missing command is a spawn error, not a throw', async () => {
    const r = await (await start({ command: '/nonexistent/agent', cwd })).done;
    expect(r.spawnError).toMatch(/ENOENT/);
  });

  test('output written right before the exit and multi-byte characters split across chunks arrive whole, in order', async () => {
    const lines: string[] = [];
    // 20,000 lines of 3-byte characters in one burst, then exit at once: every line, whole and in order
    const script = 'for (let i = 0; i < 20000; i++) process.stdout.write(i + " " + "\u65e5".repeat(7) + "\\n");';
    const p = await start({ command: process.execPath, args: ['-e', script], cwd, onLine: (_s, l) => lines.push(l) });
    expect((await p.done).code).toBe(0);
    expect(lines.length).toBe(20000);
    expect(lines.every((l, i) => l === `${i} ${'\u65e5'.repeat(7)}`)).toBe(true);
  });
});

describe('launchGroupProcess and the launcher', () => {
  test('the group is a child of the launcher, not of this process', async () => {
    const lines: string[] = [];
    const p = await launchGroupProcess({ command: 'bash', args: ['-c', 'echo $PPID'], cwd, onLine: (_s, l) => lines.push(l) });
    await p.done;
    expect(lines).toEqual([String(launcherPid())]);
  });

  test('output of many chatty groups at once (sent in batches) arrives whole, in order and before each exit', async () => {
    // 20 groups each writing 300 small lines in bursts, both streams: the launcher joins what arrives in one turn
    const script = 'for i in $(seq 1 300); do echo "out $i"; if [ $((i % 50)) -eq 0 ]; then echo "err $i" >&2; sleep 0.01; fi; done';
    const runs = await Promise.all(
      Array.from({ length: 20 }, async () => {
        const lines: string[] = [];
        const p = await launchGroupProcess({ command: 'bash', args: ['-c', script], cwd, onLine: (s, l) => lines.push(`${s}:${l}`) });
        const r = await p.done;
        return { code: r.code, lines };
      }),
    );
    for (const r of runs) {
      expect(r.code).toBe(0);
      expect(r.lines.filter((l) => l.startsWith('stdout:'))).toEqual(Array.from({ length: 300 }, (_, i) => `stdout:out ${i + 1}`));
      expect(r.lines.filter((l) => l.startsWith('stderr:'))).toEqual(Array.from({ length: 6 }, (_, i) => `stderr:err ${(i + 1) * 50}`));
    }
  });

  test("the group's output pipes are read here, not copied through the launcher, and nothing written before the hand-over is lost", async () => {
    const fs = require('node:fs') as typeof import('node:fs');
    const pipesOf = (pid: number) =>
      new Set(
        fs
          .readdirSync(`/proc/${pid}/fd`)
          .map((fd) => {
            try {
              return fs.readlinkSync(`/proc/${pid}/fd/${fd}`);
            } catch {
              return '';
            }
          })
          .filter((l) => /^(pipe|socket):/.test(l)),
      );
    const lines: string[] = [];
    const p = await launchGroupProcess({ command: 'bash', args: ['-c', 'echo first'], cwd, onLine: (_s, l) => lines.push(l) });
    await p.done;
    expect(lines).toEqual(['first']);
    // the read ends of 5 running groups' stdout and stderr: 10 more sockets here, none more in the launcher
    await new Promise((r) => setTimeout(r, 100));
    const [here, there] = [pipesOf(process.pid).size, pipesOf(launcherPid() as number).size];
    const running = await Promise.all(Array.from({ length: 5 }, () => launchGroupProcess({ command: 'sleep', args: ['5'], cwd })));
    await new Promise((r) => setTimeout(r, 200)); // the hand-over is a message behind the start
    expect(pipesOf(process.pid).size - here).toBe(10);
    expect(pipesOf(launcherPid() as number).size - there).toBe(0);
    await Promise.all(running.map((g) => g.stop()));
    // output written at once, before the pipes reached this process, arrives whole, in order (10 groups at a time)
    const counts = await Promise.all(
      Array.from({ length: 10 }, async () => {
        const got: string[] = [];
        const g = await launchGroupProcess({ command: 'bash', args: ['-c', 'seq 1 50000; seq 1 500 >&2'], cwd, onLine: (s, l) => got.push(`${s}:${l}`) });
        expect((await g.done).code).toBe(0);
        const out = got.filter((l) => l.startsWith('stdout:'));
        expect(out[0]).toBe('stdout:1');
        expect(out.at(-1)).toBe('stdout:50000');
        return [out.length, got.length - out.length];
      }),
    );
    expect(counts).toEqual(Array.from({ length: 10 }, () => [50000, 500]));
  });

  test('a launcher that dies under a running group kills the group and fails the run (the activity retries it)', async () => {
    const p = await launchGroupProcess({ command: 'bash', args: ['-c', 'sleep 60 & sleep 60; wait'], cwd });
    await new Promise((r) => setTimeout(r, 200));
    expect(groupAlive(p.pid)).toBe(true);
    process.kill(launcherPid() as number, 'SIGKILL');
    await expect(p.done).rejects.toThrow(/launcher exited/);
    await new Promise((r) => setTimeout(r, 200));
    expect(groupAlive(p.pid)).toBe(false);
    // the next one starts a new launcher
    const again = await launchGroupProcess({ command: 'true', args: [], cwd });
    expect((await again.done).code).toBe(0);
  });
});

describe('killProcessesUnder', () => {
  test('kills processes working in a directory (and their groups), leaves others alone', async () => {
    const fs = require('node:fs') as typeof import('node:fs');
    const path = require('node:path') as typeof import('node:path');
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-orphans-'));
    fs.mkdirSync(path.join(dir, 'sub'));
    const inside = startGroupProcess({ command: 'bash', args: ['-c', 'cd sub && sleep 60'], cwd: dir });
    const outside = startGroupProcess({ command: 'sleep', args: ['60'], cwd: os.tmpdir() });
    await new Promise((r) => setTimeout(r, 300));
    const killed = killProcessesUnder(dir);
    expect(killed.length).toBeGreaterThan(0);
    await inside.done;
    expect(groupAlive(inside.pid)).toBe(false);
    expect(groupAlive(outside.pid)).toBe(true);
    await outside.stop();
  });

  test('with startedWith, kills only the processes in the directory started with that variable (and their groups)', async () => {
    const fs = require('node:fs') as typeof import('node:fs');
    const path = require('node:path') as typeof import('node:path');
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-orphans-'));
    const env = (extra: Record<string, string>) => ({ PATH: process.env.PATH as string, ...extra });
    const run = startGroupProcess({ command: 'bash', args: ['-c', 'sleep 60 & wait'], cwd: dir, env: env({ ARMADA_PROCESS_ID: 'run-1' }) });
    const shell = startGroupProcess({ command: 'sleep', args: ['60'], cwd: dir, env: env({}) });
    const otherRun = startGroupProcess({ command: 'sleep', args: ['60'], cwd: dir, env: env({ ARMADA_PROCESS_ID: 'run-2' }) });
    await new Promise((r) => setTimeout(r, 300));
    const killed = killProcessesUnder(dir, { startedWith: { name: 'ARMADA_PROCESS_ID', value: 'run-1' } });
    expect(killed).toContain(run.pid);
    await run.done;
    expect(groupAlive(run.pid)).toBe(false);
    expect(groupAlive(shell.pid)).toBe(true);
    expect(groupAlive(otherRun.pid)).toBe(true);
    await shell.stop();
    await otherRun.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  });
});

describe('longTimeout', () => {
  test('a delay past 2^31-1 ms does not fire at once (Node would run it after 1 ms)', async () => {
    const { longTimeout } = await import('../../lib/process/processGroup');
    let fired = false;
    const t = longTimeout(() => {
      fired = true;
    }, 30 * 24 * 3600 * 1000);
    await new Promise((r) => setTimeout(r, 50));
    expect(fired).toBe(false);
    clearTimeout(t.ref);
    const short = await new Promise<boolean>((resolve) => longTimeout(() => resolve(true), 5));
    expect(short).toBe(true);
  });
});
