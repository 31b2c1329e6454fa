import { buildAccessPolicy, normaliseRequestedPath } from '../../lib/fs/accessPolicy';

describe('access policy defaults', () => {
  test('home, common project dirs and project dirs are allowed; /etc, /var, /sys, /proc and / never', async () => {
    const policy = await buildAccessPolicy({ home: '/home/ann', projectPaths: ['/srv/repos/app'] });
    expect(policy.permits('/home/ann')).toBe(true);
    expect(policy.permits('/home/ann/projects/x')).toBe(true);
    expect(policy.permits('/workspace/x')).toBe(true);
    expect(policy.permits('/srv/repos/app/src')).toBe(true);
    expect(policy.permits('/srv/repos/other')).toBe(false);
    expect(policy.permits('/home/annabel')).toBe(false);
    for (const p of ['/', '/etc', '/etc/passwd', '/var/log', '/sys', '/proc/1', '/tmp']) expect(policy.permits(p)).toBe(false);
  });

  test('always-blocked paths win over allowedPaths, blockedPaths are added', async () => {
    const policy = await buildAccessPolicy({ home: '/home/ann', allowedPaths: ['/', '/etc', '/data'], blockedPaths: ['/data/private'], projectPaths: [] });
    expect(policy.permits('/etc/hosts')).toBe(false);
    expect(policy.permits('/')).toBe(false);
    expect(policy.permits('/data/x')).toBe(true);
    expect(policy.permits('/data/private/x')).toBe(false);
    expect(policy.permits('/home/ann')).toBe(false); // allowedPaths replaces the defaults
  });

  test('requested paths are decoded until stable and normalised', () => {
    expect(normaliseRequestedPath('/a/%2e%2e/b', '/h')).toBe('/b');
    expect(normaliseRequestedPath('/a/%252e%252e/b', '/h')).toBe('/b');
    expect(normaliseRequestedPath('//a//b/', '/h')).toBe('/a/b');
    expect(normaliseRequestedPath('~/x', '/h')).toBe('/h/x');
    expect(() => normaliseRequestedPath('a/b', '/h')).toThrow('absolute');
  });
});
