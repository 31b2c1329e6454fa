/**
 * A managed clone made before repository credentials were sealed holds them in its remote URLs (.git/config, which
 * agents in its worktrees can read): scrubRemoteCredentials rewrites each URL holding a secret without its userinfo
 * and leaves every other value (an ssh user, a URL as shown, a second URL of a key) as it was.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { scrubRemoteCredentials } from '../../activities/git/scrubRemoteCredentials';
import { makeGitRepo } from '../support/harness';

const g = (cwd: string, ...args: string[]) => execFileSync('git', args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();

test('every remote URL holding credentials loses its userinfo; nothing else changes', async () => {
  const repo = makeGitRepo();
  try {
    g(repo, 'remote', 'add', 'origin', 'https://user:s3cretpw@host.example/a/b.git');
    g(repo, 'config', 'remote.origin.pushurl', 'https://ghp_tokenvalue@host.example/a/b.git');
    g(repo, 'config', '--add', 'remote.origin.pushurl', 'https://mirror.example/a/b.git');
    g(repo, 'remote', 'add', 'Mirror', 'https://oauth2:tok%40en@gitlab.example/a/b.git');
    g(repo, 'remote', 'add', 'ssh', 'ssh://git@host.example/a/b.git');
    g(repo, 'remote', 'add', 'shown', 'https://user:***@host.example/a/b.git');
    expect((await scrubRemoteCredentials(repo)).sort()).toEqual(['remote.Mirror.url', 'remote.origin.pushurl', 'remote.origin.url']);
    expect(g(repo, 'config', '--get-all', 'remote.origin.url')).toBe('https://host.example/a/b.git');
    expect(g(repo, 'config', '--get-all', 'remote.origin.pushurl').split('\n')).toEqual(['https://host.example/a/b.git', 'https://mirror.example/a/b.git']);
    expect(g(repo, 'remote', 'get-url', 'Mirror')).toBe('https://gitlab.example/a/b.git');
    expect(g(repo, 'remote', 'get-url', 'ssh')).toBe('ssh://git@host.example/a/b.git');
    expect(g(repo, 'remote', 'get-url', 'shown')).toBe('https://user:***@host.example/a/b.git');
    const config = fs.readFileSync(path.join(repo, '.git', 'config'), 'utf8');
    for (const secret of ['s3cretpw', 'ghp_tokenvalue', 'tok%40en']) expect(config).not.toContain(secret);
    // a second pass finds nothing to do
    expect(await scrubRemoteCredentials(repo)).toEqual([]);
  } finally {
    fs.rmSync(repo, { recursive: true, force: true });
  }
});

test('a repository without remotes is left alone', async () => {
  const repo = makeGitRepo();
  try {
    expect(await scrubRemoteCredentials(repo)).toEqual([]);
  } finally {
    fs.rmSync(repo, { recursive: true, force: true });
  }
});
