/**
 * A Temporal dev server left running by a killed `armada start` (an orphan, its pid file beside the SQLite file) is
 * stopped by the next start, which then comes up on the same port. SIGKILL only starts the old server's teardown:
 * until it has exited its port is still bound, and the new server spawned right after the kill exited with `bind:
 * address already in use` (1 start in 4 on a loaded host). That teardown is made to last here, deterministically: a
 * helper takes a duplicate of the stale server's own listening socket (pidfd_getfd(2), through Python's ctypes) and
 * closes it 3 s after the server is gone, as a process whose exit takes that long would. The start must wait for it.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { createLogger } from '../../lib/logger';
import { resolveTemporalCli, startTemporalDevServer, waitForTemporal } from '../../lib/runtime/temporalDevServer';
import { eventually } from '../support/harness';

const { freePort } = require('../support/ports') as { freePort(): Promise<number> };

jest.setTimeout(240_000);

/** Holds a duplicate of the listening socket(s) of `pid` on `port` until `holdMs` after that process is gone. */
const HOLDER = `
import ctypes, os, sys, time
pid, port, hold = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
libc = ctypes.CDLL(None, use_errno=True)
inodes = set()
for table in ('/proc/net/tcp', '/proc/net/tcp6'):
    try:
        rows = open(table).read().splitlines()[1:]
    except OSError:
        continue
    for row in rows:
        f = row.split()
        if f[3] == '0A' and int(f[1].rsplit(':', 1)[1], 16) == port:
            inodes.add(f[9])
pidfd = os.pidfd_open(pid)
held = []
for fd in os.listdir('/proc/%d/fd' % pid):
    try:
        link = os.readlink('/proc/%d/fd/%s' % (pid, fd))
    except OSError:
        continue
    if link.startswith('socket:[') and link[8:-1] in inodes:
        got = libc.syscall(438, pidfd, int(fd), 0)  # pidfd_getfd
        if got < 0:
            raise OSError(ctypes.get_errno(), 'pidfd_getfd')
        held.append(got)
print('held %d' % len(held), flush=True)
def running():
    try:
        return open('/proc/%d/stat' % pid).read().rsplit(') ', 1)[1][0] != 'Z'
    except OSError:
        return False
while running():
    time.sleep(0.005)
time.sleep(hold)
`;

const running = (pid: number): boolean => {
  try {
    return fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ').pop()?.[0] !== 'Z';
  } catch {
    return false;
  }
};

let dir: string;
const cleanup: (() => void)[] = [];

beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-devserver-stale-'));
});
afterEach(() => {
  for (const c of cleanup.splice(0)) c();
  fs.rmSync(dir, { recursive: true, force: true });
});

test('a start after a killed armada start waits until the stale dev server has exited and freed its port, then comes up', async () => {
  const cli = await resolveTemporalCli(process.env.TEMPORAL_CLI_PATH || 'temporal', process.env.ARMADA_TOOLS_DIR || os.tmpdir(), () => undefined);
  const dbFile = path.join(dir, 'temporal.db');
  const port = await freePort();
  const address = `127.0.0.1:${port}`;

  // the stale server: started through a shell that exits at once, so it is an orphan as after a kill -9 of its armada
  const shell = spawn('sh', ['-c', `"$0" server start-dev --db-filename "$1" --ip 127.0.0.1 --port "$2" --headless --log-level error >/dev/null 2>&1 & echo $!`, cli, dbFile, String(port)], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const stalePid = Number((await new Promise<string>((resolve) => readline.createInterface({ input: shell.stdout as NodeJS.ReadableStream }).once('line', resolve))).trim());
  cleanup.push(() => {
    try {
      process.kill(stalePid, 'SIGKILL');
    } catch {
      /* gone */
    }
  });
  fs.writeFileSync(`${dbFile}.pid`, String(stalePid)); // as armada start writes it
  await waitForTemporal(address, 'default', 90_000);

  const holder: ChildProcess = spawn('python3', ['-c', HOLDER, String(stalePid), String(port), '3'], { stdio: ['ignore', 'pipe', 'inherit'] });
  cleanup.push(() => holder.kill('SIGKILL'));
  const holderExited = new Promise((r) => holder.once('exit', r));
  expect(await new Promise<string>((resolve) => readline.createInterface({ input: holder.stdout as NodeJS.ReadableStream }).once('line', resolve))).toBe('held 1');

  const lines: string[] = [];
  const logger = createLogger('info', 'armada', { write: (l: string) => void lines.push(l) });
  const dev = await startTemporalDevServer({ cliPath: cli, toolsDir: os.tmpdir(), onProgress: () => undefined, dbFile, ip: '127.0.0.1', port, uiPort: null, namespace: 'default', logger });
  try {
    expect(running(stalePid)).toBe(false);
    expect(dev.server().pid).not.toBe(stalePid);
    expect(fs.readFileSync(`${dbFile}.pid`, 'utf8')).toBe(String(dev.server().pid));
    await waitForTemporal(address, 'default', 30_000); // the new server answers on the same port
    await holderExited; // it let go of the old socket before the new server could bind
    expect(lines.filter((l) => l.includes('stopping a temporal dev server left running')).length).toBe(1);
  } finally {
    await dev.stop();
  }
  await eventually(async () => !running(dev.server().pid), 30_000);
});
