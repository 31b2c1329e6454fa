/**
 * Outside fuzzing, round eight: the `armada` command line as an input surface. A hostile config file (a symlink to
 * /dev/zero, a FIFO, 10 MB) or a flag no port can be is one line naming what to fix, exit status non-zero, never a
 * stack trace, a hang or a read until the heap runs out. The numbers past what a timer holds (config values and
 * `armada worker --grace`) are in test/unit/config.test.ts and workerProcess.test.ts.
 */
import { execFile, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ARMADA_BIN } from '../support/armadaProcess';

jest.setTimeout(60_000);

let home: string;
beforeAll(() => {
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-of8-'));
});
afterAll(() => fs.rmSync(home, { recursive: true, force: true }));

/** Runs `armada …args` to its end (at most 30 s): its exit status and stderr. */
function armada(args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve) => {
    const child = execFile(process.execPath, [ARMADA_BIN, ...args], { env: { ...process.env, ARMADA_HOME: home, ...env }, timeout: 30_000, encoding: 'utf8' }, (_err, _stdout, stderr) =>
      resolve({ code: child.exitCode, stderr }),
    );
  });
}

/** One line, no stack frame. */
const oneLine = (stderr: string) => {
  expect(stderr).not.toMatch(/^\s+at /m);
  expect(stderr.trimEnd().split('\n')).toHaveLength(1);
};

test('a config file that is a symlink to /dev/zero, a FIFO or 10 MB: one line naming it, exit 1', async () => {
  const zero = path.join(home, 'zero.json');
  fs.symlinkSync('/dev/zero', zero);
  let r = await armada(['status'], { ARMADA_CONFIG: zero });
  expect(r.stderr).toBe(`armada: ${zero}: it is a character device, not a file; point ARMADA_CONFIG at a JSON file (docs/configuration.md)\n`);
  expect(r.code).toBe(1);
  // a FIFO nobody writes to: the open waited for a writer forever
  const fifo = path.join(home, 'fifo.json');
  execFileSync('mkfifo', [fifo]);
  r = await armada(['status'], { ARMADA_CONFIG: fifo });
  expect(r.stderr).toBe(`armada: ${fifo}: it is a FIFO (named pipe), not a file; point ARMADA_CONFIG at a JSON file (docs/configuration.md)\n`);
  expect(r.code).toBe(1);
  const big = path.join(home, 'big.json');
  fs.writeFileSync(big, `{"branchPrefix":"armada","x":"${'y'.repeat(10 * 1024 * 1024)}"}`);
  r = await armada(['status'], { ARMADA_CONFIG: big });
  expect(r.stderr).toBe(`armada: ${big}: larger than a config file may be (1048576 bytes)\n`);
  expect(r.code).toBe(1);
  // a number past a double's range parsed as Infinity and passed the schema's integer check where a key has no
  // maximum: `armada status` went on (exit 0) with codehost.pollIntervalMs Infinity
  // what held: a __proto__ key and a wrong type each name the key
  for (const [text, says] of [
    ['{"codehost":{"pollIntervalMs":1e999}}', '"pollIntervalMs" is a number too large to hold'],
    ['{"__proto__":{"branchPrefix":"x"}}', 'unknown key "__proto__"'],
    ['{"agents":{"a":{"command":"claude"}}}', '"agents.a.command"'],
  ]) {
    const file = path.join(home, 'c.json');
    fs.writeFileSync(file, text);
    r = await armada(['status'], { ARMADA_CONFIG: file });
    expect(r.stderr).toContain(says);
    oneLine(r.stderr);
    expect(r.code).toBe(1);
  }
});

test('armada infra with a port flag no port can be: a usage error naming the flag, nothing started', async () => {
  for (const [flag, value] of [
    ['--pg-port', 'abc'],
    ['--pg-port', '99999'],
    ['--temporal-port', '-1'],
    ['--temporal-port', '0x1f90'],
  ]) {
    const r = await armada(['infra', `${flag}=${value}`], {});
    expect(r.stderr).toBe(`armada infra: ${flag} must be a port number from 0 to 65535, not "${value}"; run armada infra --help\n`);
    expect(r.code).toBe(2);
  }
  // nothing was started in the home: no PostgreSQL data directory, no Temporal database
  expect(fs.existsSync(path.join(home, 'pg'))).toBe(false);
  expect(fs.existsSync(path.join(home, 'temporal.db'))).toBe(false);
});
