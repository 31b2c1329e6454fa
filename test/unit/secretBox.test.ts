import crypto from 'node:crypto';
import { openSecret, sealSecret } from '../../lib/secretBox';

describe('secretBox', () => {
  const key = crypto.randomBytes(32);
  test('round-trips, never stores the plaintext, and a fresh IV each time', () => {
    const a = sealSecret(key, 'sk-live-123');
    const b = sealSecret(key, 'sk-live-123');
    expect(a).not.toContain('sk-live-123');
    expect(a).not.toEqual(b);
    expect(openSecret(key, a)).toBe('sk-live-123');
  });
  test('another key or a tampered value fails', () => {
    const sealed = sealSecret(key, 'secret');
    expect(() => openSecret(crypto.randomBytes(32), sealed)).toThrow();
    const parts = sealed.split(':');
    parts[3] = Buffer.from('other').toString('base64');
    expect(() => openSecret(key, parts.join(':'))).toThrow();
    expect(() => openSecret(key, 'plain')).toThrow('not a sealed secret');
  });
});
