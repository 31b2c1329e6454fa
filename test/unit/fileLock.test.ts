/** lib/fs/fileLock.ts: one holder at a time; a holder that is gone does not block the next writer for ever. */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { FileLockTimeout, withFileLock } from '../../lib/fs/fileLock';

let dir: string;
let file: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-lock-'));
  file = path.join(dir, 'mcp.json');
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

/** The pid of a process that has exited. */
function deadPid(): number {
  const r = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
  return Number(r.stdout);
}

test('the lock exists while fn runs and is gone after, also when fn throws', () => {
  expect(withFileLock(file, () => fs.existsSync(`${file}.lock`))).toBe(true);
  expect(fs.existsSync(`${file}.lock`)).toBe(false);
  expect(() =>
    withFileLock(file, () => {
      throw new Error('boom');
    }),
  ).toThrow('boom');
  expect(fs.readdirSync(dir)).toEqual([]);
});

test('a live holder: the writer waits, then gives up with a message naming the holder and the lock file', () => {
  fs.writeFileSync(`${file}.lock`, JSON.stringify({ pid: process.pid, host: os.hostname(), token: 'other' }));
  const t0 = Date.now();
  let thrown: unknown;
  try {
    withFileLock(file, () => 'never', { waitMs: 300 });
  } catch (err) {
    thrown = err;
  }
  expect(Date.now() - t0).toBeGreaterThanOrEqual(300);
  expect(thrown).toBeInstanceOf(FileLockTimeout);
  expect((thrown as Error).message).toBe(
    `${file} is being changed by process ${process.pid} on ${os.hostname()} (lock file ${file}.lock); try again, or delete the lock file if that process is gone`,
  );
  // someone else's lock is left alone
  expect(JSON.parse(fs.readFileSync(`${file}.lock`, 'utf8')).token).toBe('other');
});

test('a holder that died (no such pid on this host), or a lock that was never written and is old, is taken over', () => {
  fs.writeFileSync(`${file}.lock`, JSON.stringify({ pid: deadPid(), host: os.hostname(), token: 'dead' }));
  expect(withFileLock(file, () => 'ran', { waitMs: 300 })).toBe('ran');
  fs.writeFileSync(`${file}.lock`, '');
  const old = new Date(Date.now() - 60_000);
  fs.utimesSync(`${file}.lock`, old, old);
  expect(withFileLock(file, () => 'ran again', { waitMs: 300 })).toBe('ran again');
  expect(fs.readdirSync(dir)).toEqual([]);
});
