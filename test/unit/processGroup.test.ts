import os from 'node:os';
import { groupAlive, killProcessesUnder, startGroupProcess } from '../../lib/process/processGroup';

const cwd = os.tmpdir();

describe('startGroupProcess', () => {
  test('gets stdin, reports lines from both streams and the exit code', async () => {
    const lines: string[] = [];
    const p = startGroupProcess({
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

  test('abort stops the whole group, grandchildren included', async () => {
    const ac = new AbortController();
    const p = startGroupProcess({ command: 'bash', args: ['-c', 'sleep 60 & sleep 60; wait'], cwd, signal: ac.signal, graceMs: 500 });
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

  test('a process ignoring SIGTERM is killed after the grace period; timeout is reported', async () => {
    const p = startGroupProcess({ command: 'bash', args: ['-c', 'trap "" TERM; sleep 30'], cwd, timeoutMs: 200, graceMs: 300 });
    const r = await p.done;
    expect(r.timedOut).toBe(true);
    expect(r.signal).toBe('SIGKILL');
  });

  test('a missing command is a spawn error, not a throw', async () => {
    const r = await startGroupProcess({ command: '/nonexistent/agent', cwd }).done;
    expect(r.spawnError).toMatch(/ENOENT/);
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
