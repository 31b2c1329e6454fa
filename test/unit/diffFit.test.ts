/** A diff fitted into a host read's byte budget: files that do not fit are listed with their counts, never dropped. */
import { fitDiff, omitBlock } from '../../lib/attempts/diffFit';
import { parseUnifiedDiff } from '../../lib/attempts/diffParse';

const added = (name: string, lines: string[]) =>
  `diff --git a/${name} b/${name}\nnew file mode 100644\nindex 0000000..1111111\n--- /dev/null\n+++ b/${name}\n@@ -0,0 +1,${lines.length} @@\n${lines.map((l) => `+${l}\n`).join('')}`;
const big = 'x'.repeat(5000);
const diff = [
  added('a.txt', ['one']),
  added('big.txt', [big]),
  'diff --git "a/tab\\there.txt" "b/tab\\there.txt"\nindex 1111111..2222222 100644\n--- "a/tab\\there.txt"\n+++ "b/tab\\there.txt"\n@@ -1,3 +1,3 @@\n ctx\n-old\n+new\n ctx\n',
  added('many.txt', Array.from({ length: 500 }, (_, i) => `line ${i}`)),
  'diff --git a/old.txt b/moved.txt\nsimilarity index 90%\nrename from old.txt\nrename to moved.txt\nindex 1111111..2222222 100644\n--- a/old.txt\n+++ b/moved.txt\n@@ -1,2 +1,2 @@\n-a\n+b\n keep\n',
  'diff --git a/gone.txt b/gone.txt\ndeleted file mode 100644\nindex 1111111..0000000\n--- a/gone.txt\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-x\n--- a line that looks like a header\n',
  'diff --git a/z.bin b/z.bin\nnew file mode 100644\nindex 0000000..3333333\nBinary files /dev/null and b/z.bin differ\n',
].join('');

test('within the budget the diff is as it is', () => {
  expect(fitDiff(diff, Buffer.byteLength(JSON.stringify(diff)), 'why')).toEqual({ text: diff, truncated: false });
});

test('past the budget the largest files are listed with their counts and no lines, the others whole, none dropped', () => {
  const whole = parseUnifiedDiff(diff);
  const fitted = fitDiff(diff, 2000, 'past the budget');
  expect(fitted.truncated).toBe(false);
  expect(Buffer.byteLength(JSON.stringify(fitted.text))).toBeLessThanOrEqual(2000 + 2);
  const files = parseUnifiedDiff(fitted.text);
  expect(files.summary).toEqual(whole.summary);
  expect(files.files.map((f) => f.path)).toEqual(whole.files.map((f) => f.path));
  const byPath = Object.fromEntries(files.files.map((f) => [f.path, f]));
  expect(byPath['big.txt']).toMatchObject({ status: 'added', omitted: true, additions: 1, deletions: 0, changes: [] });
  expect(byPath['many.txt']).toMatchObject({ status: 'added', omitted: true, additions: 500, changes: [] });
  for (const f of whole.files.filter((w) => !['big.txt', 'many.txt'].includes(w.path))) expect(byPath[f.path]).toEqual(f);
  expect(fitted.text).toContain('Armada: changes not shown: 500 lines added, 0 removed (past the budget)\n');

  // each file as an omitted block: renames, deletions, binary files and quoted names keep their headers and counts
  const omitted = parseUnifiedDiff(diff.split(/(?=^diff --git )/m).map((b) => omitBlock(b, 'all')).join(''));
  expect(omitted.summary).toEqual(whole.summary);
  expect(omitted.files.map((f) => ({ ...f, omitted: undefined, changes: [] }))).toEqual(whole.files.map((f) => ({ ...f, omitted: undefined, changes: [] })));
  expect(omitted.files.every((f) => f.omitted && f.changes.length === 0)).toBe(true);
  expect(omitted.files.find((f) => f.path === 'moved.txt')).toMatchObject({ status: 'renamed', oldPath: 'old.txt', additions: 1, deletions: 1 });
  expect(omitted.files.find((f) => f.path === 'gone.txt')).toMatchObject({ status: 'deleted', deletions: 2 });
  expect(omitted.files.find((f) => f.path === 'z.bin')).toMatchObject({ binary: true });
});

test('when not even the list of files fits, the result says truncated', () => {
  const fitted = fitDiff(diff, 300, 'tiny');
  expect(fitted.truncated).toBe(true);
  expect(Buffer.byteLength(JSON.stringify(fitted.text))).toBeLessThanOrEqual(300 + 2);
});

test('the budget counts the text as it travels (JSON): control bytes take six bytes there, not one', () => {
  const control = added('ctl.txt', ['\u0001'.repeat(300)]);
  const text = added('a.txt', ['one']) + control;
  // within the budget by its UTF-8 bytes, past it as JSON
  const budget = Buffer.byteLength(text) + 100;
  const fitted = fitDiff(text, budget, 'json');
  expect(Buffer.byteLength(JSON.stringify(fitted.text))).toBeLessThanOrEqual(budget + 2);
  expect(parseUnifiedDiff(fitted.text).files.map((f) => [f.path, f.omitted ?? false])).toEqual([['a.txt', false], ['ctl.txt', true]]);
});
