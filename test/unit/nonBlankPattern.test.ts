/**
 * NON_BLANK_PATTERN (api/http/inputPolicy.ts) accepts exactly the strings that stay non-empty after trim(), and
 * Python's regular expressions (schemathesis generates with them) read it the same way: `\S` did not (JavaScript
 * counts U+FEFF as white space, Python U+001C–U+001F and U+0085).
 */
import { spawnSync } from 'node:child_process';
import { NAME_PATTERN, NON_BLANK_PATTERN, NON_BLANK_TEXT_PATTERN, nonBlankPatternWithout, TEXT_PATTERN } from '../../api/http/inputPolicy';

const codePoints = [...Array.from({ length: 0x10000 }, (_, i) => i).filter((i) => i < 0xd800 || i > 0xdfff), 0x1f600, 0x10ffff];

test('a one-character string matches exactly when trim() keeps it', () => {
  const re = new RegExp(NON_BLANK_PATTERN, 'u');
  const disagree = codePoints.filter((cp) => {
    const c = String.fromCodePoint(cp);
    return re.test(c) !== (c.trim() !== '');
  });
  expect(disagree).toEqual([]);
  expect(re.test(' \t\ufeff\u3000x ')).toBe(true);
  expect(re.test(' \t\ufeff\u3000\u2028 ')).toBe(false);
});

test("Python's re finds the same blank characters", () => {
  const script = `import re, json, sys
p = re.compile(sys.argv[1])
cps = [i for i in range(0x10000) if not 0xd800 <= i <= 0xdfff] + [0x1f600, 0x10ffff]
print(json.dumps([i for i in cps if not p.search(chr(i))]))`;
  const r = spawnSync('python3', ['-c', script, NON_BLANK_PATTERN], { encoding: 'utf8' });
  expect(r.stderr).toBe('');
  const pythonBlank: number[] = JSON.parse(r.stdout);
  const jsBlank = codePoints.filter((cp) => String.fromCodePoint(cp).trim() === '');
  expect(pythonBlank).toEqual(jsBlank);
});

test('nonBlankPatternWithout(",") (task labels) accepts a string with a character trim() keeps and no comma, in both engines', () => {
  const pattern = nonBlankPatternWithout(',');
  const re = new RegExp(pattern, 'u');
  const samples = ['bug', ' ui ', '\u001c', ' ', '\t\ufeff\u3000', '', 'a,b', ',', ' , '];
  const expected = samples.map((l) => l.trim() !== '' && !l.includes(','));
  expect(samples.map((l) => re.test(l))).toEqual(expected);
  const script = `import re, json, sys
p = re.compile(sys.argv[1])
print(json.dumps([bool(p.search(s)) for s in json.loads(sys.argv[2])]))`;
  const r = spawnSync('python3', ['-c', script, pattern, JSON.stringify(samples)], { encoding: 'utf8' });
  expect(r.stderr).toBe('');
  expect(JSON.parse(r.stdout)).toEqual(expected);
});

/** What each engine says of `samples` against `pattern`: [JavaScript's answers, Python's answers]. */
function bothEngines(pattern: string, samples: string[]): [boolean[], boolean[]] {
  const re = new RegExp(pattern, 'u');
  const script = `import re, json, sys
p = re.compile(sys.argv[1])
print(json.dumps([bool(p.search(s)) for s in json.loads(sys.argv[2])]))`;
  const r = spawnSync('python3', ['-c', script, pattern, JSON.stringify(samples)], { encoding: 'utf8' });
  expect(r.stderr).toBe('');
  return [samples.map((x) => re.test(x)), JSON.parse(r.stdout)];
}

// session 47: names and titles refuse every control and bidi override character, multi-line text every C0 control
// but tab, line feed and carriage return; both engines read the patterns alike
test('NAME_PATTERN: not blank, no C0/C1 control, DEL or bidi override', () => {
  const samples = ['Fix login', ' ui ', 'caf\u00e9 \u{1f600}', '', ' ', 'a\tb', 'a\nb', 'a\u0000', 'red\u001b[31m', 'a\u007f', 'c1\u0085', 'over\u202eride', 'iso\u2066x'];
  const expected = [true, true, true, false, false, false, false, false, false, false, false, false, false];
  expect(bothEngines(NAME_PATTERN, samples)).toEqual([expected, expected]);
});

test('TEXT_PATTERN and NON_BLANK_TEXT_PATTERN: tab, LF and CR but no other C0 control; the second not blank either', () => {
  const samples = ['', ' ', 'line 1\r\nline 2\tend', '\u00a0\u3000 x', 'bell\u0007', 'esc\u001b[0m', 'nul\u0000', 'vt\u000b', 'ff\u000c', '\u001f', 'del\u007f and c1\u0085 stay', '\n\t\r'];
  const text = [true, true, true, true, false, false, false, false, false, false, true, true];
  const nonBlank = [false, false, true, true, false, false, false, false, false, false, true, false];
  expect(bothEngines(TEXT_PATTERN, samples)).toEqual([text, text]);
  expect(bothEngines(NON_BLANK_TEXT_PATTERN, samples)).toEqual([nonBlank, nonBlank]);
  // a control character after leading blanks, or only blanks of every kind trim() removes but \v and \f (controls)
  expect(bothEngines(NON_BLANK_TEXT_PATTERN, [' \u000b x', ' \u2028\ufeff\u1680 ', ' \u2028\ufeff\u1680 x '])).toEqual([
    [false, false, true],
    [false, false, true],
  ]);
});

test('NON_BLANK_TEXT_PATTERN answers a 100 000-character prompt in linear time, a control at its end too', () => {
  const re = new RegExp(NON_BLANK_TEXT_PATTERN, 'u');
  const started = performance.now();
  expect(re.test(`${'a'.repeat(100_000)}\u0001`)).toBe(false);
  expect(re.test(`${' '.repeat(100_000)}\u0001`)).toBe(false);
  expect(re.test(`${' '.repeat(50_000)}${'a '.repeat(25_000)}`)).toBe(true);
  expect(performance.now() - started).toBeLessThan(1000);
});
