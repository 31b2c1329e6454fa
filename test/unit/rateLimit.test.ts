import { FixedWindowCounter } from '../../api/http/rateLimit';

describe('FixedWindowCounter', () => {
  test('counts per key within a window, starts over after it, and forgets expired windows', () => {
    const c = new FixedWindowCounter(2, 1000);
    expect(c.hit('a', 0).count).toBe(1);
    expect(c.hit('a', 500)).toEqual({ count: 2, resetAt: 1000 });
    expect(c.hit('b', 600).count).toBe(1);
    expect(c.hit('a', 999).count).toBe(3);
    expect(c.hit('a', 1000)).toEqual({ count: 1, resetAt: 2000 });
    c.hit('c', 2500); // sweeps a and b
    expect(c.size).toBe(1);
  });
});
