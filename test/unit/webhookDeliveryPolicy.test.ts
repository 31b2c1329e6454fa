import { parseFileConfig } from '../../lib/config';
import { DEFAULT_DELIVERY_POLICY, backoffMs, deliveryPolicy, withJitter } from '../../lib/webhooks/deliveryPolicy';

describe('webhook delivery policy', () => {
  test('defaults: 16 tries over at most 24 h, the breaker open after 3 failures, pauses 1 s ×2 up to 5 min', () => {
    expect(deliveryPolicy(undefined)).toEqual({ timeoutMs: 10_000, maxTries: 16, retryForMs: 86_400_000, openAfterFailures: 3, backoffInitialMs: 1000, backoffMaxMs: 300_000 });
    expect(deliveryPolicy({ timeoutMs: 5000, maxTries: 4 })).toEqual({ ...DEFAULT_DELIVERY_POLICY, timeoutMs: 5000, maxTries: 4 });
    // a cap below the first pause would make the pauses shrink: the cap is at least the first pause
    expect(deliveryPolicy({ backoffInitialMs: 2000, backoffMaxMs: 500 }).backoffMaxMs).toBe(2000);
  });

  test('the pause after the n-th failed try doubles from the first and stops at the cap', () => {
    const p = DEFAULT_DELIVERY_POLICY;
    expect([1, 2, 3, 4, 8, 9, 10, 16, 1000].map((n) => backoffMs(p, n))).toEqual([1000, 2000, 4000, 8000, 128_000, 256_000, 300_000, 300_000, 300_000]);
  });

  test('jitter adds up to 10 % (at least 50 ms), never takes away', () => {
    expect(withJitter(1000, () => 0)).toBe(1000);
    expect(withJitter(1000, () => 1)).toBe(1100);
    expect(withJitter(100, () => 1)).toBe(150);
    expect(withJitter(300_000, () => 0.5)).toBe(315_000);
  });

  test('the config keys are checked at start', () => {
    expect(parseFileConfig({ webhooks: { maxTries: 16, retryForMs: 3_600_000, openAfterFailures: 3, backoffInitialMs: 1000, backoffMaxMs: 300_000 } }, 'c.json').webhooks?.maxTries).toBe(16);
    expect(() => parseFileConfig({ webhooks: { maxTries: 0 } }, 'c.json')).toThrow(/"webhooks.maxTries"/);
    expect(() => parseFileConfig({ webhooks: { retryForMs: 10 } }, 'c.json')).toThrow(/"webhooks.retryForMs"/);
    expect(() => parseFileConfig({ webhooks: { openAfterFailures: 0 } }, 'c.json')).toThrow(/"webhooks.openAfterFailures"/);
    expect(() => parseFileConfig({ webhooks: { backoffMaxMs: 1.5 } }, 'c.json')).toThrow(/"webhooks.backoffMaxMs"/);
  });
});
