import { classifyRepoUrl, REPO_URL_PATTERN } from '../../lib/git';

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
  ];
  const disagree = urls.filter((u) => pattern.test(u) !== (classifyRepoUrl(u).kind !== 'invalid'));
  expect(disagree).toEqual([]);
});
