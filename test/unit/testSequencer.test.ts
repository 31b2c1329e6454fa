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
