import { classifyRepoUrl, REPO_URL_PATTERN } from '../../lib/git';

/**
 * Remote URLs with a user name or password before the host (and one with an `@` in its query), and whether the rule
 * accepts them: an http(s) URL's credentials are taken out before git runs (lib/urlCredentials.ts), an ssh:// or
 * git:// URL's password would be on git's command line (docs/security.md, "Credentials in URLs").
 */
const USERINFO_CASES: [string, boolean][] = [
  ['https://user:s3cret@host/o/r.git', true],
  ['https://ghp_token@github.com/o/r.git', true],
  ['https://user:p@ss@host/o/r', true],
  ['https://us%40er:p%23ss@host/o/r', true],
  ['ssh://git@host:2222/o/r.git', true],
  ['https://github.com/o/r.git?x=a@b', true],
  ['ssh://git:s3cret@host/o/r.git', false],
  ['ssh://git:@host/o/r.git', false],
  ['git://user:s3cret@host/r.git', false],
  ['ssh://a@b@host/o/r', false],
  ['https://user:pa#ss@host/o/r', false],
  ['https://user:pa?ss@host/o/r', false],
  ["https://user:pa'ss@host/o/r", false],
  ['https://user:pa<ss@host/o/r', false],
];

test('REPO_URL_PATTERN (the documented rule) admits exactly the URLs classifyRepoUrl does not call invalid', () => {
  const pattern = new RegExp(REPO_URL_PATTERN, 'u');
  const urls = [
    'https://github.com/o/r.git',
    'http://host/x',
    'ssh://git@host/o/r',
    'git://host/r',
    'git@github.com:o/r.git',
    'user.name@host-1:path',
    'file:///srv/repo',
    '/srv/repo',
    '/srv/with space',
    'relative/path',
    'https://host',
    'https://host/',
    'ftp://host/r',
    'git@host',
    '@host:r',
    'C:\\repo',
    '~/repo',
    'https://ho st/r',
    'é@host:r',
    ...USERINFO_CASES.map(([url]) => url),
  ];
  const disagree = urls.filter((u) => pattern.test(u) !== (classifyRepoUrl(u).kind !== 'invalid'));
  expect(disagree).toEqual([]);
});

test('a password only where Armada can take it out of the URL: in http(s), not in ssh:// or git://', () => {
  const pattern = new RegExp(REPO_URL_PATTERN, 'u');
  expect(USERINFO_CASES.map(([url]) => [url, pattern.test(url)])).toEqual(USERINFO_CASES);
});
