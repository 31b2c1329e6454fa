/**
 * NON_BLANK_PATTERN (api/http/inputPolicy.ts) accepts exactly the strings that stay non-empty after trim(), and
 * Python's regular expressions (schemathesis generates with them) read it the same way: `\S` did not (JavaScript
 * counts U+FEFF as white space, Python U+001C–U+001F and U+0085).
 */
import { spawnSync } from 'node:child_process';
import { NON_BLANK_PATTERN } from '../../api/http/inputPolicy';

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
