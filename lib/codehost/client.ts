/**
 * A minimal client of the code host's REST API in GitHub's shapes (so GitHub Enterprise works by changing the base
 * URLs). Every failure is a `CodehostError` carrying the spec's lower-case string code.
 */
import { formatBytes, readBoundedText } from '../http/readBounded';
import { AppError } from '../errors';
import { redactSecrets } from '../secretText';
import { plainObject } from '../untrustedJson';

/** An error of the code-hosting endpoints: rendered as `{success:false, error:"<code>", message}`. */
export class CodehostError extends AppError {
  constructor(statusCode: number, code: string, message: string) {
    super(statusCode, code, message);
    this.name = 'CodehostError';
  }
}

export const codehostAuthRequired = () =>
  new CodehostError(401, 'codehost_auth_required', 'Sign in to the code host first (POST /api/auth/codehost/device)');

export interface CodehostUrls {
  apiUrl: string;
  oauthUrl: string;
  clientId: string;
}

export interface DeviceCode {
  device_code: string;
  user_code: string;
  verification_uri: string;
  expires_in: number;
  interval: number;
}

export type DeviceTokenResult =
  | { kind: 'token'; access_token: string; token_type: string; scope: string }
  | { kind: 'error'; error: string; message: string };

/** The host's pull request (the fields Armada reads). */
export interface HostPull {
  number: number;
  title: string;
  body: string | null;
  state: 'open' | 'closed';
  merged?: boolean;
  merged_at?: string | null;
  user?: { login: string } | null;
  created_at: string;
  html_url: string;
  url: string;
  head: { ref: string };
  base: { ref: string };
}

export interface HostRepo {
  name: string;
  full_name: string;
  owner: { login: string };
  default_branch: string;
  private: boolean;
  html_url: string;
  clone_url: string;
}

export interface HostHook {
  id: number;
  active: boolean;
  events: string[];
  config: { url?: string };
  created_at: string;
}

const TIMEOUT_MS = 15_000;
/** The most of one code-host answer that is read: its API's pages (100 pulls, a hook list) are far below. */
const MAX_CODEHOST_ANSWER_BYTES = 8 * 1024 * 1024;
const trimSlash = (u: string) => u.replace(/\/+$/, '');

async function send(url: string, init: { method: string; token?: string; body?: unknown }): Promise<{ status: number; json: unknown }> {
  const headers: Record<string, string> = { accept: 'application/vnd.github+json', 'user-agent': 'armada', 'x-github-api-version': '2022-11-28' };
  if (init.token) headers.authorization = `Bearer ${init.token}`;
  if (init.body !== undefined) headers['content-type'] = 'application/json';
  let res: Response;
  try {
    res = await fetch(url, { method: init.method, headers, body: init.body === undefined ? undefined : JSON.stringify(init.body), signal: AbortSignal.timeout(TIMEOUT_MS) });
  } catch (err) {
    throw new CodehostError(502, 'codehost_unavailable', `The code host did not answer: ${(err as Error).name === 'TimeoutError' ? 'timed out' : 'connection failed'}`);
  }
  const read = await readBoundedText(res, MAX_CODEHOST_ANSWER_BYTES);
  const { truncated } = read;
  // a host (or a proxy before it) may quote the token it refused: it goes no further than here
  const text = init.token ? redactSecrets(read.text, [init.token], '[token]') : read.text;
  if (truncated) throw new CodehostError(502, 'codehost_unavailable', `The code host answered more than ${formatBytes(MAX_CODEHOST_ANSWER_BYTES)} (HTTP ${res.status}); check ARMADA_CODEHOST_API_URL`);
  let json: unknown = null;
  try {
    json = text ? JSON.parse(text) : null;
  } catch {
    json = null;
  }
  return { status: res.status, json };
}

/*
 * The answers of the code host are read, not trusted: a server at ARMADA_CODEHOST_API_URL that answers another shape
 * (a proxy's HTML error page, an API of another version, a test double) gives a 502 saying so, never a 500 or a row
 * written from a missing field.
 */


function unreadable(what: string, field: string): CodehostError {
  return new CodehostError(502, 'codehost_unavailable', `The code host answered ${what} Armada cannot read (${field} is missing or of another type); check ARMADA_CODEHOST_API_URL`);
}

function need<T>(ok: boolean, value: unknown, what: string, field: string): T {
  if (!ok) throw unreadable(what, field);
  return value as T;
}

const isText = (v: unknown): v is string => typeof v === 'string';
/** A link the board shows to be followed: http(s) only (never `javascript:` from a host that says so). */
const isWebLink = (v: unknown): v is string => isText(v) && /^https?:\/\//i.test(v);

/** A pull request of the host's answer, with the fields Armada reads checked. */
export function readPull(v: unknown): HostPull {
  const what = 'a pull request';
  const o = need<Record<string, unknown>>(!!plainObject(v), v, what, 'the object');
  const head = plainObject(o.head);
  const base = plainObject(o.base);
  const user = plainObject(o.user);
  return {
    number: need(Number.isSafeInteger(o.number) && (o.number as number) >= 1, o.number, what, 'number'),
    title: isText(o.title) ? o.title : '',
    body: isText(o.body) ? o.body : null,
    state: need(o.state === 'open' || o.state === 'closed', o.state, what, 'state'),
    merged: o.merged === true,
    merged_at: isText(o.merged_at) ? o.merged_at : null,
    user: user && isText(user.login) ? { login: user.login } : null,
    created_at: need(isText(o.created_at), o.created_at, what, 'created_at'),
    html_url: need(isWebLink(o.html_url), o.html_url, what, 'html_url'),
    url: isText(o.url) ? o.url : (o.html_url as string),
    head: { ref: need(isText(head?.ref), head?.ref, what, 'head.ref') },
    base: { ref: need(isText(base?.ref), base?.ref, what, 'base.ref') },
  };
}

function readRepo(v: unknown): HostRepo {
  const what = 'a repository';
  const o = need<Record<string, unknown>>(!!plainObject(v), v, what, 'the object');
  const owner = plainObject(o.owner);
  return {
    name: need(isText(o.name), o.name, what, 'name'),
    full_name: need(isText(o.full_name), o.full_name, what, 'full_name'),
    owner: { login: need(isText(owner?.login), owner?.login, what, 'owner.login') },
    default_branch: need(isText(o.default_branch), o.default_branch, what, 'default_branch'),
    private: o.private === true,
    html_url: need(isWebLink(o.html_url), o.html_url, what, 'html_url'),
    clone_url: need(isText(o.clone_url), o.clone_url, what, 'clone_url'),
  };
}

function readHook(v: unknown): HostHook {
  const what = 'a webhook';
  const o = need<Record<string, unknown>>(!!plainObject(v), v, what, 'the object');
  const config = plainObject(o.config);
  return {
    id: need(Number.isSafeInteger(o.id), o.id, what, 'id'),
    active: o.active !== false,
    events: need(Array.isArray(o.events) && o.events.every(isText), o.events, what, 'events'),
    config: { url: isText(config?.url) ? config.url : undefined },
    created_at: need(isText(o.created_at), o.created_at, what, 'created_at'),
  };
}

function hostMessage(json: unknown): string {
  const m = (json as { message?: unknown } | null)?.message;
  return typeof m === 'string' ? m : 'no message';
}

/** Maps a non-2xx API answer to a CodehostError; `notFoundCode` names what a 404 means for this call. */
function failure(status: number, json: unknown, notFoundCode: string, what: string): CodehostError {
  if (status === 401) return codehostAuthRequired();
  if (status === 404) return new CodehostError(404, notFoundCode, `${what} not found on the code host`);
  if (status === 403 || status === 429) return new CodehostError(403, 'codehost_forbidden', `The code host refused: ${hostMessage(json)}`);
  if (status === 422) return new CodehostError(422, 'codehost_validation_failed', `The code host rejected the request: ${hostMessage(json)}`);
  return new CodehostError(502, 'codehost_unavailable', `The code host answered ${status}`);
}

export function createCodehostClient(urls: CodehostUrls) {
  const api = trimSlash(urls.apiUrl);
  const oauth = trimSlash(urls.oauthUrl);
  const repoPath = (owner: string, repo: string) => `${api}/repos/${encodeURIComponent(owner)}/${encodeURIComponent(repo)}`;
  return {
    /** POST {oauth}/login/device/code */
    async requestDeviceCode(scope: string): Promise<DeviceCode> {
      if (!urls.clientId) throw new CodehostError(400, 'codehost_not_configured', 'ARMADA_CODEHOST_CLIENT_ID is not set');
      const r = await send(`${oauth}/login/device/code`, { method: 'POST', body: { client_id: urls.clientId, scope } });
      const j = plainObject(r.json);
      if (r.status !== 200 || !j || !isText(j.device_code) || !j.device_code || !isText(j.user_code) || !j.user_code || !isWebLink(j.verification_uri)) {
        throw new CodehostError(502, 'codehost_unavailable', `The code host did not start the device flow (${r.status})`);
      }
      const seconds = (v: unknown, fallback: number) => (typeof v === 'number' && Number.isSafeInteger(v) && v > 0 ? v : fallback);
      return { device_code: j.device_code, user_code: j.user_code, verification_uri: j.verification_uri, expires_in: seconds(j.expires_in, 900), interval: seconds(j.interval, 5) };
    },

    /** POST {oauth}/login/oauth/access_token: the token, or the host's error (authorization_pending, slow_down, …). */
    async pollDeviceToken(deviceCode: string): Promise<DeviceTokenResult> {
      const r = await send(`${oauth}/login/oauth/access_token`, {
        method: 'POST',
        body: { client_id: urls.clientId, device_code: deviceCode, grant_type: 'urn:ietf:params:oauth:grant-type:device_code' },
      });
      const j = plainObject(r.json) ?? {};
      if (isText(j.access_token) && j.access_token) return { kind: 'token', access_token: j.access_token, token_type: isText(j.token_type) ? j.token_type : 'bearer', scope: isText(j.scope) ? j.scope : '' };
      if (isText(j.error) && j.error) return { kind: 'error', error: j.error, message: isText(j.error_description) ? j.error_description : j.error };
      throw new CodehostError(502, 'codehost_unavailable', `The code host answered ${r.status} without a token`);
    },

    async getRepository(token: string | undefined, owner: string, repo: string): Promise<HostRepo> {
      const r = await send(repoPath(owner, repo), { method: 'GET', token });
      if (r.status !== 200) throw failure(r.status, r.json, 'repository_not_found', `Repository ${owner}/${repo}`);
      return readRepo(r.json);
    },

    async listPulls(token: string | undefined, owner: string, repo: string, q: { state: string; page: number; limit: number }): Promise<HostPull[]> {
      const qs = new URLSearchParams({ state: q.state, page: String(q.page), per_page: String(q.limit) });
      const r = await send(`${repoPath(owner, repo)}/pulls?${qs}`, { method: 'GET', token });
      if (r.status !== 200) throw failure(r.status, r.json, 'repository_not_found', `Repository ${owner}/${repo}`);
      if (!Array.isArray(r.json)) throw unreadable('a list of pull requests', 'the list');
      return r.json.map(readPull);
    },

    async getPull(token: string | undefined, owner: string, repo: string, n: number): Promise<HostPull> {
      const r = await send(`${repoPath(owner, repo)}/pulls/${n}`, { method: 'GET', token });
      if (r.status !== 200) throw failure(r.status, r.json, 'pr_not_found', `Pull request ${owner}/${repo}#${n}`);
      return readPull(r.json);
    },

    async createPull(token: string, owner: string, repo: string, pr: { title: string; body: string; head: string; base: string; draft: boolean }): Promise<HostPull> {
      const r = await send(`${repoPath(owner, repo)}/pulls`, { method: 'POST', token, body: pr });
      if (r.status !== 201 && r.status !== 200) throw failure(r.status, r.json, 'repository_not_found', `Repository ${owner}/${repo}`);
      return readPull(r.json);
    },

    async createHook(token: string, owner: string, repo: string, hook: { url: string; events: string[] }): Promise<HostHook> {
      const r = await send(`${repoPath(owner, repo)}/hooks`, {
        method: 'POST',
        token,
        body: { name: 'web', active: true, events: hook.events, config: { url: hook.url, content_type: 'json', insecure_ssl: '0' } },
      });
      if (r.status !== 201 && r.status !== 200) {
        if (r.status === 422) return Promise.reject(new CodehostError(400, 'invalid_webhook_url', `The code host rejected the webhook: ${hostMessage(r.json)}`));
        throw failure(r.status, r.json, 'repository_not_found', `Repository ${owner}/${repo}`);
      }
      return readHook(r.json);
    },
  };
}

export type CodehostClient = ReturnType<typeof createCodehostClient>;

/** The spec's pull request shape. */
export function pullRequestView(p: HostPull) {
  return {
    number: p.number,
    title: p.title,
    body: p.body ?? '',
    state: p.state,
    author: p.user?.login ?? '',
    createdAt: utcIso(p.created_at),
    htmlUrl: p.html_url,
    head: p.head.ref,
    base: p.base.ref,
    url: p.url,
  };
}

/**
 * owner/repo of a GitHub-style repository URL: https://host/owner/repo(.git), ssh://git@host/owner/repo.git,
 * git@host:owner/repo.git. Undefined for anything else (local paths).
 */
export function parseRepoSlug(url: string): { owner: string; repo: string } | undefined {
  const m =
    /^(?:https?|ssh|git):\/\/(?:[^@/]+@)?[^/]+(?::\d+)?\/(?:.+\/)?([^/]+)\/([^/]+?)(?:\.git)?\/?$/.exec(url) ??
    /^[\w.-]+@[\w.-]+:(?:.+\/)?([^/]+)\/([^/]+?)(?:\.git)?\/?$/.exec(url);
  if (!m?.[1] || !m[2]) return undefined;
  return { owner: m[1], repo: m[2] };
}

/** The code host's `…:05Z` in the API's one timestamp form `…:05.000Z` (an unreadable value is passed through). */
export function utcIso(value: string): string {
  const d = new Date(value);
  return Number.isNaN(d.getTime()) ? value : d.toISOString();
}
