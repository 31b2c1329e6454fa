/** /proc/<pid>/stat read in one place (lib/process/procStat.ts): fields counted from after the command name's LAST ')'. */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { parseProcStat, processAlive, readProcStat } from '../../lib/process/procStat';

/** A stat line of proc(5)'s shape: pid 4242, state `state`, ppid 17, pgrp 4242, utime 11, stime 12, cutime 13, cstime 14, starttime 987654, rss 321 pages. */
const statLine = (comm: string, state: string) =>
  `4242 (${comm}) ${state} 17 4242 4242 0 -1 4194304 100 0 0 0 11 12 13 14 20 0 1 0 987654 123456789 321 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n`;

test('a command name with spaces and parentheses: the fields after it are read from after its last parenthesis', () => {
  // a reader splitting at the first ') ' took ` b (c` for the state, and a name like `x) Z 1 (y` made a live process a zombie
  for (const comm of ['a) b (c', 'x) Z 1 (y', 'plain', '()', ') )']) {
    expect(parseProcStat(statLine(comm, 'S'))).toEqual({
      pid: 4242,
      comm,
      state: 'S',
      ppid: 17,
      pgrp: 4242,
      utime: 11,
      stime: 12,
      cutime: 13,
      cstime: 14,
      startTime: 987654,
      rssPages: 321,
    });
  }
  expect(parseProcStat(statLine('a) S (b', 'Z'))?.state).toBe('Z');
  expect(parseProcStat('')).toBeUndefined();
  expect(parseProcStat('4242 (cut short) S 1 2')).toBeUndefined();
});

test("a live process that named itself 'a) b (c' is read as it is: its name, state, parent and group; gone once it has exited", async () => {
  // bash names itself through /proc/<pid>/comm and waits on its stdin
  const child = spawn('bash', ['-c', 'printf "a) b (c" > /proc/$$/comm && echo named && read -r _'], { stdio: ['pipe', 'pipe', 'inherit'], detached: true });
  try {
    await once(child.stdout, 'data');
    const pid = child.pid as number;
    expect(readProcStat(pid)).toMatchObject({ pid, comm: 'a) b (c', state: expect.stringMatching(/^[RS]$/), ppid: process.pid, pgrp: pid });
    expect(readProcStat(pid)?.startTime).toBeGreaterThan(0);
    expect(processAlive(pid)).toBe(true);
    child.stdin.end('\n');
    await once(child, 'exit');
    expect(processAlive(pid)).toBe(false);
    expect(readProcStat(pid)).toBeUndefined();
  } finally {
    child.kill('SIGKILL');
  }
});
