import { parseRepoSlug } from '../../lib/codehost/client';
import { remoteType } from '../../lib/fs/gitDiscovery';

describe('repository URLs', () => {
  test('owner/repo from https, ssh and scp-like URLs (GitHub Enterprise hosts too); none for local paths', () => {
    expect(parseRepoSlug('https://github.com/acme/widgets')).toEqual({ owner: 'acme', repo: 'widgets' });
    expect(parseRepoSlug('https://github.com/acme/widgets.git')).toEqual({ owner: 'acme', repo: 'widgets' });
    expect(parseRepoSlug('https://ghe.corp.example:8443/acme/widgets.git/')).toEqual({ owner: 'acme', repo: 'widgets' });
    expect(parseRepoSlug('ssh://git@github.com/acme/widgets.git')).toEqual({ owner: 'acme', repo: 'widgets' });
    expect(parseRepoSlug('git@github.com:acme/widgets.git')).toEqual({ owner: 'acme', repo: 'widgets' });
    expect(parseRepoSlug('/srv/git/widgets.git')).toBeUndefined();
    expect(parseRepoSlug('file:///srv/git/widgets.git')).toBeUndefined();
  });

  test('remote types', () => {
    expect(remoteType('https://github.com/a/b.git')).toBe('https');
    expect(remoteType('git@github.com:a/b.git')).toBe('ssh');
    expect(remoteType('ssh://git@host/a/b')).toBe('ssh');
    expect(remoteType('/srv/git/b.git')).toBe('file');
  });
});
