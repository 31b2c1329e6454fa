/** patternRefusesNul (api/http/inputPolicy.ts): which request patterns already refuse NUL, so need no NUL-free `allOf`. */
import { NAME_CONTROLS, NAME_PATTERN, NON_BLANK_TEXT_PATTERN, NUL_FREE_PATTERN, TEXT_PATTERN, nonBlankPatternWithout, nulFreeStrings, patternRefusesNul } from '../../api/http/inputPolicy';

const admitsNul = (pattern: string) => ['\u0000', 'a\u0000b', '\u0000\u0000x'].some((s) => new RegExp(pattern, 'u').test(s));

test('the text and name patterns refuse NUL, and say so', () => {
  for (const p of [TEXT_PATTERN, NAME_PATTERN, NON_BLANK_TEXT_PATTERN, NUL_FREE_PATTERN, nonBlankPatternWithout(`,${NAME_CONTROLS}`), '^[a-z0-9-]+$', '^[\\t\\n\\-\\]]*$']) {
    expect([p, admitsNul(p)]).toEqual([p, false]);
    expect([p, patternRefusesNul(p)]).toEqual([p, true]);
  }
});

test('a pattern that admits NUL, or one it cannot read, counts as admitting it', () => {
  // each of these matches a string with NUL
  for (const p of ['\\S', '^[^,]*$', nonBlankPatternWithout(','), '^[a-z\\S]*$', '^[\\u0000-\\u0008]*$', '^[^\\\\u0000]*$', '^(a|\\u0000)*$', '^.*$']) {
    expect([p, admitsNul(p)]).toEqual([p, true]);
    expect([p, patternRefusesNul(p)]).toEqual([p, false]);
  }
  // these refuse NUL, but not in the form it reads: they keep the NUL-free allOf, which is merely redundant
  for (const p of ['^[^\\u0000]*$x', '^(?:[^\\u0000])*$', '^[^\\u0000]{1,5}$', '^$', 'a']) expect([p, patternRefusesNul(p)]).toEqual([p, false]);
});

test('nulFreeStrings adds the NUL-free allOf only beside a pattern that admits NUL', () => {
  const out = nulFreeStrings({
    type: 'object',
    properties: { text: { type: 'string', pattern: TEXT_PATTERN, maxLength: 20000 }, label: { type: 'string', pattern: '\\S' }, plain: { type: 'string' } },
    additionalProperties: false,
  }) as { properties: Record<string, Record<string, unknown>> };
  expect(out.properties.text).toEqual({ type: 'string', pattern: TEXT_PATTERN, maxLength: 20000 });
  expect(out.properties.label).toEqual({ type: 'string', pattern: '\\S', allOf: [{ pattern: NUL_FREE_PATTERN }] });
  expect(out.properties.plain).toEqual({ type: 'string', pattern: NUL_FREE_PATTERN });
});
