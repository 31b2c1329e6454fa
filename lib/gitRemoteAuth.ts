/**
 * How a git command that talks to a remote gets a project's credentials (docs/security.md, "Credentials in URLs"):
 * as an `Authorization: Basic` header for that remote's URL only (`http.<url>.extraHeader`), set through git's
 * GIT_CONFIG_COUNT variables in the environment of that one git process (and the helpers it runs to reach the
 * remote). Not on the command line, which every user of the host can read in /proc; not in .git/config, which every
 * agent working in the repository can read. The repository's hooks are off for that command: they would run with
 * the header in their environment, and an agent can write them.
 */
import type { UrlCredentials } from './urlCredentials';

/** The variables to add to one git command's environment so it authenticates to `remoteUrl` (no userinfo in it). */
export function gitRemoteAuthEnv(remoteUrl: string, credentials: UrlCredentials): Record<string, string> {
  const basic = Buffer.from(`${credentials.username}:${credentials.password}`, 'utf8').toString('base64');
  return {
    GIT_CONFIG_COUNT: '2',
    GIT_CONFIG_KEY_0: `http.${remoteUrl}.extraHeader`,
    GIT_CONFIG_VALUE_0: `Authorization: Basic ${basic}`,
    GIT_CONFIG_KEY_1: 'core.hooksPath',
    GIT_CONFIG_VALUE_1: '/dev/null',
  };
}
