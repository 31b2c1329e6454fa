import { redactSecrets, secretForms } from '../../lib/secretText';
import { credentialSecrets } from '../../lib/urlCredentials';

test('every form a secret travels in is replaced, longest first', () => {
  const key = 'k3y"with\\odd/chars+=';
  const b64 = Buffer.from(key).toString('base64');
  const text = `raw ${key} json ${JSON.stringify(key)} url ${encodeURIComponent(key)} b64 ${b64} b64url ${Buffer.from(key).toString('base64url')}`;
  const out = redactSecrets(text, [key], '[key]');
  for (const form of secretForms(key)) expect(out).not.toContain(form);
  expect(out).toBe('raw [key] json "[key]" url [key] b64 [key] b64url [key]');
});

test('short or absent secrets leave the text as it is', () => {
  expect(secretForms('abc12')).toEqual([]);
  const text = 'an abc12 in words';
  expect(redactSecrets(text, ['abc12', null, undefined, ''])).toBe(text);
});

test("a repository's credentials: the password and the Basic header's user:password, or the token written as the user name", () => {
  const header = (s: string) => `Authorization: Basic ${Buffer.from(s).toString('base64')}`;
  const pw = credentialSecrets({ username: 'alice', password: 's3cret-pass' });
  expect(redactSecrets(`remote: ${header('alice:s3cret-pass')} for alice:s3cret-pass`, pw, '***')).toBe('remote: Authorization: Basic *** for ***');
  const token = credentialSecrets({ username: 'ghp_token123', password: '' });
  expect(redactSecrets(`remote: ${header('ghp_token123:')} ghp_token123`, token, '***')).toBe('remote: Authorization: Basic *** ***');
  expect(credentialSecrets(null)).toEqual([]);
});
