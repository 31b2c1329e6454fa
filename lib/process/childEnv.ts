/**
 * The one environment every child process Armada starts gets: agents, project setup scripts, scheduler `script`
 * tasks and multi-agent tasks. It is built from an allow-list, never from the server's whole environment, so
 * DATABASE_URL, ARMADA_ENCRYPTION_KEY, the API keys, TEMPORAL_* and any other secret of the server stay out of code
 * that a task, a project or an agent controls. docs/security.md#child-environment
 */

/** Variables passed through from the server's environment when set: what shells, git and CLIs need to work. */
export const ALLOWED_ENV: readonly string[] = [
  'PATH',
  'HOME',
  'USER',
  'LOGNAME',
  'SHELL',
  'LANG',
  'LANGUAGE',
  'TERM',
  'COLORTERM',
  'NO_COLOR',
  'TZ',
  'TMPDIR',
  'TMP',
  'TEMP',
  'XDG_CONFIG_HOME',
  'XDG_CACHE_HOME',
  'XDG_DATA_HOME',
  'XDG_STATE_HOME',
  'XDG_RUNTIME_DIR',
  // git identity of commits an agent or a script makes itself
  'GIT_AUTHOR_NAME',
  'GIT_AUTHOR_EMAIL',
  'GIT_COMMITTER_NAME',
  'GIT_COMMITTER_EMAIL',
  // network setup of the host (proxies, CA bundles), which CLIs need to reach anything
  'HTTP_PROXY',
  'HTTPS_PROXY',
  'NO_PROXY',
  'http_proxy',
  'https_proxy',
  'no_proxy',
  'SSL_CERT_FILE',
  'SSL_CERT_DIR',
  'NODE_EXTRA_CA_CERTS',
];

/** Locale variables (LC_ALL, LC_CTYPE, …) pass as a family. */
const ALLOWED_PREFIXES: readonly string[] = ['LC_'];

const REFERENCE = /\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g;

export interface ChildEnvOptions {
  /**
   * The agent profile's `env` (config file `agents.<name>.env`). Values are literal, except that `${NAME}` is
   * replaced by the server's variable NAME (empty when unset); a value that is only a reference to an unset variable
   * is left out. This is how a profile hands a child one of the server's variables, e.g. a vendor API key.
   */
  profileEnv?: Readonly<Record<string, string>>;
  /** Per-spawn contract variables (ARMADA_TASK_ID, ARMADA_WORKTREE, …); they win over everything else. */
  vars?: Readonly<Record<string, string | undefined>>;
  /** The server's environment (default: process.env). */
  base?: NodeJS.ProcessEnv;
}

/**
 * Linux refuses to start a process with an environment string (`NAME=value` and its NUL) over 128 KiB
 * (MAX_ARG_STRLEN): the spawn fails with E2BIG.
 */
export const MAX_ENV_STRING_BYTES = 128 * 1024;

/** `value` when `NAME=value` fits in one environment string, else undefined (the variable is left out). */
export function envValueThatFits(name: string, value: string): string | undefined {
  return Buffer.byteLength(`${name}=${value}`) + 1 <= MAX_ENV_STRING_BYTES ? value : undefined;
}

/** Whether `name` passes from the server's environment to a child without being named by a profile. */
export function isAllowedEnvName(name: string): boolean {
  return ALLOWED_ENV.includes(name) || ALLOWED_PREFIXES.some((p) => name.startsWith(p));
}

/** Resolves `${NAME}` references of one profile value against the server's environment. */
export function expandProfileValue(value: string, base: NodeJS.ProcessEnv): string | undefined {
  // own variables only: `${constructor}` or `${toString}` read Object.prototype's functions, and the child got their
  // source text (`function Object() { [native code] }`) as the value
  const variable = (name: string): string | undefined => (Object.hasOwn(base, name) ? base[name] : undefined);
  const whole = /^\$\{([A-Za-z_][A-Za-z0-9_]*)\}$/.exec(value);
  if (whole) return variable(whole[1] as string);
  return value.replace(REFERENCE, (_m, name: string) => variable(name) ?? '');
}

/** The environment of one child process: allow-listed server variables, then the profile's env, then `vars`. */
export function childEnv(opts: ChildEnvOptions = {}): Record<string, string> {
  const base = opts.base ?? process.env;
  // bash reads ~/.bashrc when its stdin is a socket and SHLVL is below 2, as for a shell started by a remote shell
  // daemon; Node's stdin pipes are sockets. An agent gets its prompt through one: SHLVL=1 makes a bash it starts level
  // 2, which reads no startup file, as when the same command runs from a terminal (docs/security.md)
  const env: Record<string, string> = { SHLVL: '1' };
  for (const [k, v] of Object.entries(base)) if (v !== undefined && isAllowedEnvName(k)) env[k] = v;
  for (const [k, v] of Object.entries(opts.profileEnv ?? {})) {
    const value = expandProfileValue(v, base);
    if (value !== undefined) env[k] = value;
  }
  for (const [k, v] of Object.entries(opts.vars ?? {})) if (v !== undefined) env[k] = v;
  return env;
}

/**
 * The environment of a server or tool Armada runs for itself: the embedded PostgreSQL (initdb and the postmaster,
 * whose backends hand it to every `COPY … FROM PROGRAM` a SQL superuser runs), the Temporal dev server, and pip
 * provisioning the Temporal CLI. The allow-list above, the variables named by `prefixes` (pip's own `PIP_`), then
 * `vars`. Until session 51 each got the whole of Armada's environment: ARMADA_ENCRYPTION_KEY, the API keys,
 * DATABASE_URL, the vendors' keys (docs/security.md, "Child environment").
 */
export function serverEnv(vars: Record<string, string> = {}, prefixes: readonly string[] = []): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && (isAllowedEnvName(k) || prefixes.some((p) => k.startsWith(p)))) env[k] = v;
  return { ...env, ...vars };
}
