/** The event stream's resume cursor: a watermark and the seqs above it, and its token (lib/events/eventCursor.ts). */
import { EVENT_CURSOR_MAX_LENGTH, EVENT_CURSOR_PATTERN, EventCursor, TOKEN_MAX_RANGES, formatUnion, parseEventCursor } from '../../lib/events/eventCursor';

test('seqs above a hole are kept as ranges; the watermark moves once the hole is filled', () => {
  const c = EventCursor.upTo(9);
  c.add(11).add(13).add(12).add(16);
  expect([c.watermark, c.max(), c.toString()]).toEqual([9, 16, '9:11-13,16']);
  expect([9, 10, 11, 13, 14, 16, 17].map((s) => c.has(s))).toEqual([true, false, true, true, false, true, false]);
  expect(c.gaps()).toEqual([
    [10, 10],
    [14, 15],
  ]);
  c.add(10);
  expect([c.watermark, c.toString(), c.hasGaps()]).toEqual([13, '13:16', true]);
  c.addRange(14, 15);
  expect([c.watermark, c.toString(), c.hasGaps()]).toEqual([16, '16', false]);
  c.add(5).addRange(1, 3);
  expect(c.toString()).toBe('16'); // nothing new
});

test('ranges merge when they overlap or touch, in any order', () => {
  const c = EventCursor.upTo(0);
  c.addRange(20, 25).addRange(5, 6).addRange(27, 30).addRange(26, 26).addRange(7, 8).addRange(3, 4);
  expect(c.toString()).toBe('0:3-8,20-30');
  c.addRange(1, 40);
  expect(c.toString()).toBe('40');
});

test('union and containment', () => {
  const a = parseEventCursor('10:12-15,20') as EventCursor;
  const b = parseEventCursor('11') as EventCursor;
  expect(formatUnion(a, b)).toBe('15:20');
  expect(b.within(a)).toBe(false);
  expect((parseEventCursor('9:13-14') as EventCursor).within(a)).toBe(true);
  expect(formatUnion(a, parseEventCursor('9:13') as EventCursor)).toBe('10:12-15,20');
  // the part of another cursor up to a seq
  expect(EventCursor.upTo(3).addAll(a, 13).toString()).toBe('10:12-13');
});

test('tokens: a plain seq is the watermark alone; a bad range or a number past the safe integers is refused', () => {
  expect(parseEventCursor('42')?.toString()).toBe('42');
  expect(parseEventCursor('0')?.toString()).toBe('0');
  expect(parseEventCursor('10:15-16,12')?.toString()).toBe('10:12,15-16');
  expect(parseEventCursor('10:11,13')?.toString()).toBe('11:13'); // made canonical
  expect(parseEventCursor('10:16-15')).toBeUndefined();
  expect(parseEventCursor('9007199254740992')).toBeUndefined();
  expect(parseEventCursor('9007199254740991')?.watermark).toBe(Number.MAX_SAFE_INTEGER);
  const pattern = new RegExp(EVENT_CURSOR_PATTERN);
  for (const ok of ['0', '42', '10:12', '10:12-15,20,22-30']) expect(pattern.test(ok)).toBe(true);
  for (const bad of ['', '-1', '10:', '10:12-', '10:,12', 'a', '10:12;13', '1.5']) expect(pattern.test(bad)).toBe(false);
});

test('a cursor with more ranges than a token carries writes the lowest ones: a resume may send some again, never skips', () => {
  const c = EventCursor.upTo(0);
  for (let i = 0; i < TOKEN_MAX_RANGES + 10; i++) c.add(2 + i * 2);
  const token = c.toString();
  expect(new RegExp(EVENT_CURSOR_PATTERN).test(token)).toBe(true);
  expect(token.length).toBeLessThanOrEqual(EVENT_CURSOR_MAX_LENGTH);
  const back = parseEventCursor(token) as EventCursor;
  expect(back.within(c)).toBe(true);
  expect(back.max()).toBe(2 + (TOKEN_MAX_RANGES - 1) * 2);
  // the longest token the pattern admits fits the length bound
  const longest = `${'9'.repeat(16)}:${Array.from({ length: TOKEN_MAX_RANGES }, () => `${'9'.repeat(16)}-${'9'.repeat(16)}`).join(',')}`;
  expect(new RegExp(EVENT_CURSOR_PATTERN).test(longest)).toBe(true);
  expect(longest.length).toBeLessThanOrEqual(EVENT_CURSOR_MAX_LENGTH);
});
