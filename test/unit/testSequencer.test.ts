/** The order jest starts the test files in (test/support/testSequencer.js; docs/testing.md, "Order"). */
import fs from 'node:fs';
import path from 'node:path';

interface SequencedTest {
  path: string;
  context: { config: { rootDir: string; cache: boolean }; hasteFS: { getSize(p: string): number } };
}
interface Sequencer {
  sort(tests: SequencedTest[]): Promise<SequencedTest[]>;
}
const Sequencer = require('../support/testSequencer') as { new (options: object): Sequencer; LONGEST_FIRST: string[] };

const ROOT = path.join(__dirname, '..', '..');

/** Tests as jest hands them over on a clean clone: no timing cache, only file sizes. */
function tests(sizes: Record<string, number>): SequencedTest[] {
  const context = { config: { rootDir: ROOT, cache: false }, hasteFS: { getSize: (p: string) => sizes[path.relative(ROOT, p)] ?? 0 } };
  return Object.keys(sizes).map((rel) => ({ path: path.join(ROOT, rel), context }));
}

test('every file the list names exists, once', () => {
  for (const rel of Sequencer.LONGEST_FIRST) expect({ rel, exists: fs.existsSync(path.join(ROOT, rel)) }).toEqual({ rel, exists: true });
  expect(new Set(Sequencer.LONGEST_FIRST).size).toBe(Sequencer.LONGEST_FIRST.length);
});

test('on a clean clone the listed files start first, in the list order, and the rest follow biggest first', async () => {
  const [first, second] = Sequencer.LONGEST_FIRST;
  const sorted = await new Sequencer({}).sort(tests({ 'test/unit/big.test.ts': 50_000, [second as string]: 10, 'test/unit/small.test.ts': 20, [first as string]: 5 }));
  expect(sorted.map((t) => path.relative(ROOT, t.path))).toEqual([first, second, 'test/unit/big.test.ts', 'test/unit/small.test.ts']);
});

test('the quiet phase of npm test names files that exist, once; the rest phase leaves exactly them out', () => {
  const { QUIET_PHASE } = require('../support/testPhases') as { QUIET_PHASE: string[] };
  for (const rel of QUIET_PHASE) expect({ rel, exists: fs.existsSync(path.join(ROOT, rel)) }).toEqual({ rel, exists: true });
  expect(new Set(QUIET_PHASE).size).toBe(QUIET_PHASE.length);
  const configOf = (phase: string) => {
    const { execFileSync } = require('node:child_process') as typeof import('node:child_process');
    const out = execFileSync(process.execPath, ['-e', 'const c = require("./jest.config.js"); console.log(JSON.stringify({ testMatch: c.testMatch, ignore: c.testPathIgnorePatterns, workers: c.maxWorkers }))'], {
      cwd: ROOT,
      env: { ...process.env, ARMADA_TEST_PHASE: phase },
      encoding: 'utf8',
    });
    return JSON.parse(out) as { testMatch: string[]; ignore: string[]; workers: number };
  };
  const quiet = configOf('quiet');
  expect(quiet.testMatch).toEqual(QUIET_PHASE.map((f) => `<rootDir>/${f}`));
  expect(quiet.workers).toBe(3);
  const rest = configOf('rest');
  expect(rest.testMatch).toEqual(['**/*.test.ts']);
  expect(rest.workers).toBe(4);
  for (const rel of QUIET_PHASE) expect(rest.ignore.some((p) => new RegExp(p.replace('<rootDir>', ROOT)).test(path.join(ROOT, rel)))).toBe(true);
  // a file beside one of them (same name, another folder) is not left out
  expect(rest.ignore.some((p) => new RegExp(p.replace('<rootDir>', ROOT)).test(path.join(ROOT, 'test/unit/browser.test.ts')))).toBe(false);
});
