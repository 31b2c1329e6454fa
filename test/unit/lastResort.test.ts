/**
 * lib/runtime/lastResort.ts in a real process: an exception thrown in a timer, or a promise rejected with no handler,
 * ends the process with one fatal JSON log line naming the error, after the process's own shutdown ran, with exit
 * code 70; a second one while stopping exits at once.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const ROOT = path.join(__dirname, '..', '..');

function run(body: string): { code: number | null; stdout: string; marker: string | undefined } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-last-resort-'));
  try {
    const marker = path.join(dir, 'stopped');
    const script = path.join(dir, 'crash.ts');
    fs.writeFileSync(
      script,
      `import fs from 'node:fs';
import { createLogger } from ${JSON.stringify(path.join(ROOT, 'lib', 'logger'))};
import { installLastResort } from ${JSON.stringify(path.join(ROOT, 'lib', 'runtime', 'lastResort'))};
const logger = createLogger('info');
const marker = ${JSON.stringify(marker)};
installLastResort(logger, async () => { await new Promise((r) => setTimeout(r, 100)); fs.writeFileSync(marker, 'shutdown ran'); });
setInterval(() => undefined, 1000); // something keeps the process alive, as servers do
${body}
`,
    );
    const r = spawnSync(process.execPath, [path.join(ROOT, 'bin', 'armada-ts'), script], { encoding: 'utf8', timeout: 30_000, env: { ...process.env, NO_COLOR: '1' } });
    return { code: r.status, stdout: r.stdout, marker: fs.existsSync(marker) ? fs.readFileSync(marker, 'utf8') : undefined };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

const fatalLines = (stdout: string) =>
  stdout
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as { level: number; msg: string; err?: { message: string } })
    .filter((l) => l.level === 60);

test('an exception thrown in a timer: the shutdown runs, one fatal line names it, exit code 70', () => {
  const r = run(`setTimeout(() => { throw new Error('boom in a timer'); }, 50);`);
  expect(r.code).toBe(70);
  expect(r.marker).toBe('shutdown ran');
  const fatal = fatalLines(r.stdout);
  expect(fatal).toHaveLength(1);
  expect(fatal[0]).toMatchObject({ msg: expect.stringMatching(/^uncaught exception: stopping everything/), err: { message: 'boom in a timer' } });
}, 40_000);

test('a rejection nobody handles: the same', () => {
  const r = run(`setTimeout(() => { void Promise.reject(new Error('nobody caught me')); }, 50);`);
  expect(r.code).toBe(70);
  expect(r.marker).toBe('shutdown ran');
  expect(fatalLines(r.stdout)[0]).toMatchObject({ msg: expect.stringMatching(/^unhandled rejection: stopping everything/), err: { message: 'nobody caught me' } });
}, 40_000);

test('a second exception while stopping exits at once, without waiting for the shutdown', () => {
  const r = run(`setTimeout(() => { throw new Error('first'); }, 50); setTimeout(() => { throw new Error('second'); }, 70);`);
  expect(r.code).toBe(70);
  expect(r.marker).toBeUndefined(); // the 100 ms shutdown never finished
  expect(fatalLines(r.stdout).map((l) => l.err?.message)).toEqual(['first', 'second']);
}, 40_000);
