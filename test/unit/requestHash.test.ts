/** The body fingerprint an Idempotency-Key is bound to (lib/attempts/requestHash.ts): canonical JSON, sha256. */
import { createHash } from 'node:crypto';
import { requestHash } from '../../lib/attempts/requestHash';

test('the same body in another key order is the same request; no body is {}; an absent field is no field', () => {
  const a = requestHash({ llm: 'scripted', options: { temperature: 1, maxTokens: 5 }, description: 'd' });
  expect(requestHash({ description: 'd', options: { maxTokens: 5, temperature: 1 }, llm: 'scripted' })).toBe(a);
  expect(requestHash(undefined)).toBe(requestHash({}));
  expect(requestHash({ prompt: 'p', draftId: undefined })).toBe(requestHash({ prompt: 'p' }));
  // sha256 of the canonical JSON, as a hex string
  expect(requestHash({ b: [{ d: 1, c: 2 }], a: null })).toBe(createHash('sha256').update('{"a":null,"b":[{"c":2,"d":1}]}').digest('hex'));
});

test('any other value is another request: a field, its type, a nested value, an array order', () => {
  const hashes = [
    { prompt: 'p' },
    { prompt: 'p ' },
    { prompt: 'p', source: 'api' },
    { llm: 'scripted', options: { temperature: 1 } },
    { llm: 'scripted', options: { temperature: '1' } },
    { llm: 'scripted', options: {} },
    { llm: 'scripted' },
    { list: [1, 2] },
    { list: [2, 1] },
  ].map(requestHash);
  expect(new Set(hashes).size).toBe(hashes.length);
});
