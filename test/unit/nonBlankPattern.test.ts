/**
 * NON_BLANK_PATTERN (api/http/inputPolicy.ts) accepts exactly the strings that stay non-empty after trim(), and
 * Python's regular expressions (schemathesis generates with them) read it the same way: `\S` did not (JavaScript
 * counts U+FEFF as white space, Python U+001C–U+001F and U+0085).
 */
import { spawnSync } from 'node:child_process';
import { NON_BLANK_PATTERN, nonBlankPatternWithout } from '../../api/http/inputPolicy';

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
