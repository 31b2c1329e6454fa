/**
 * A fake code host: a real HTTP server on 127.0.0.1 speaking the GitHub REST and OAuth device-flow shapes Armada
 * uses. Repositories can be tied to a local bare repository, so a pull request's head must really have been pushed.
 */
import { execFileSync } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface FakeRepo {
  owner: string;
  name: string;
  defaultBranch?: string;
  private?: boolean;
  /** Bare repository the project's origin points at; PR heads must exist there. */
  bare?: string;
}

interface FakePull {
  number: number;
  title: string;
  body: string | null;
  state: 'open' | 'closed';
  merged: boolean;
  merged_at: string | null;
  user: { login: string };
  created_at: string;
  head: { ref: string };
  base: { ref: string };
  draft: boolean;
}

export interface RecordedRequest {
  method: string;
  path: string;
  authorization?: string;
  body: unknown;
}

export interface FakeCodehost {
  url: string;
  clientId: string;
  requests: RecordedRequest[];
  pulls: Map<string, FakePull[]>;
  hooks: { repo: string; id: number; events: string[]; url: string }[];
  /** The user enters the user_code: the next poll returns the token. */
  authorize(userCode: string): void;
  /** The token the device flow hands out. */
  token: string;
  addPull(owner: string, repo: string, p: Partial<Omit<FakePull, 'head'>> & { title: string; head: string }): number;
  merge(owner: string, repo: string, n: number): void;
  /** When set, the answer to every /repos/… request whose method and path it matches (an odd host, a broken proxy). */
  oddAnswer?: (method: string, path: string) => { status: number; body: string } | undefined;
  close(): Promise<void>;
}

export async function startFakeCodehost(repos: FakeRepo[]): Promise<FakeCodehost> {
  const clientId = 'fake-client-id';
  const token = `gho_fake_${Math.random().toString(36).slice(2)}`;
  const devices = new Map<string, { userCode: string; authorized: boolean; issued: boolean }>();
  const pulls = new Map<string, FakePull[]>();
  const hooks: FakeCodehost['hooks'] = [];
  const requests: RecordedRequest[] = [];
  let nextDevice = 1;
  let nextHook = 100;
  let base = '';

  const repoOf = (owner: string, name: string) => repos.find((r) => r.owner === owner && r.name === name);
  const pullsOf = (key: string) => {
    let list = pulls.get(key);
    if (!list) {
      list = [];
      pulls.set(key, list);
    }
    return list;
  };
  const pullJson = (key: string, p: FakePull) => ({
    ...p,
    url: `${base}/repos/${key}/pulls/${p.number}`,
    html_url: `${base.replace('127.0.0.1', 'localhost')}/${key}/pull/${p.number}`,
  });
  const addPull: FakeCodehost['addPull'] = (owner, repo, p) => {
    const list = pullsOf(`${owner}/${repo}`);
    const number = list.length + 1;
    list.push({
      number,
      title: p.title,
      body: p.body ?? null,
      state: p.state ?? 'open',
      merged: false,
      merged_at: null,
      user: p.user ?? { login: 'octo' },
      created_at: githubTime(),
      head: { ref: p.head },
      base: { ref: p.base?.ref ?? 'main' },
      draft: p.draft ?? false,
    });
    return number;
  };

  const server = http.createServer((req, res) => {
    let raw = '';
    req.on('data', (d) => {
      raw += d;
    });
    req.on('end', () => {
      let body: Record<string, unknown> = {};
      try {
        body = raw ? JSON.parse(raw) : {};
      } catch {
        body = {};
      }
      const url = new URL(req.url ?? '/', base);
      requests.push({ method: req.method ?? '', path: url.pathname + url.search, authorization: req.headers.authorization, body });
      const send = (status: number, json: unknown) => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(json));
      };
      const authed = req.headers.authorization === `Bearer ${token}`;

      if (req.method === 'POST' && url.pathname === '/login/device/code') {
        if (body.client_id !== clientId) return send(401, { error: 'incorrect_client_credentials' });
        const deviceCode = `dev-${nextDevice++}-${Math.random().toString(36).slice(2)}`;
        const userCode = `ABCD-${String(nextDevice).padStart(4, '0')}`;
        devices.set(deviceCode, { userCode, authorized: false, issued: false });
        return send(200, { device_code: deviceCode, user_code: userCode, verification_uri: `${base}/login/device`, expires_in: 900, interval: 1 });
      }
      if (req.method === 'POST' && url.pathname === '/login/oauth/access_token') {
        const d = devices.get(String(body.device_code));
        if (body.grant_type !== 'urn:ietf:params:oauth:grant-type:device_code' || body.client_id !== clientId) return send(200, { error: 'unsupported_grant_type' });
        if (!d) return send(200, { error: 'bad_verification_code', error_description: 'The device_code is wrong' });
        if (!d.authorized) return send(200, { error: 'authorization_pending', error_description: 'pending' });
        d.issued = true;
        return send(200, { access_token: token, token_type: 'bearer', scope: 'repo' });
      }

      const odd = url.pathname.startsWith('/repos/') ? fake.oddAnswer?.(req.method ?? '', url.pathname) : undefined;
      if (odd) {
        res.writeHead(odd.status, { 'content-type': 'application/json' });
        return res.end(odd.body);
      }
      const m = /^\/repos\/([^/]+)\/([^/]+)(\/.*)?$/.exec(url.pathname);
      if (!m) return send(404, { message: 'Not Found' });
      const [owner, name, rest = ''] = [decodeURIComponent(m[1] ?? ''), decodeURIComponent(m[2] ?? ''), m[3]];
      const repo = repoOf(owner, name);
      if (!repo || (repo.private && !authed)) return send(404, { message: 'Not Found' });
      if (req.headers.authorization && !authed) return send(401, { message: 'Bad credentials' });
      const key = `${owner}/${name}`;

      if (req.method === 'GET' && rest === '') {
        return send(200, {
          name,
          full_name: key,
          owner: { login: owner },
          default_branch: repo.defaultBranch ?? 'main',
          private: repo.private ?? false,
          html_url: `${base}/${key}`,
          clone_url: `${base}/${key}.git`,
        });
      }
      if (req.method === 'GET' && rest === '/pulls') {
        const state = url.searchParams.get('state') ?? 'open';
        const page = Number(url.searchParams.get('page') ?? 1);
        const perPage = Number(url.searchParams.get('per_page') ?? 30);
        const all = pullsOf(key).filter((p) => state === 'all' || p.state === state);
        return send(200, all.slice((page - 1) * perPage, page * perPage).map((p) => pullJson(key, p)));
      }
      const one = /^\/pulls\/(\d+)$/.exec(rest);
      if (req.method === 'GET' && one) {
        const p = pullsOf(key).find((x) => x.number === Number(one[1]));
        return p ? send(200, pullJson(key, p)) : send(404, { message: 'Not Found' });
      }
      if (req.method === 'POST' && rest === '/pulls') {
        if (!authed) return send(401, { message: 'Requires authentication' });
        const head = String(body.head ?? '');
        if (repo.bare) {
          try {
            execFileSync('git', ['--git-dir', repo.bare, 'rev-parse', '--verify', `refs/heads/${head}`], { stdio: 'pipe' });
          } catch {
            return send(422, { message: 'Validation Failed', errors: [{ field: 'head', code: 'invalid' }] });
          }
        }
        const n = addPull(owner, name, { title: String(body.title), body: (body.body as string) ?? null, head, base: { ref: String(body.base) }, draft: Boolean(body.draft), user: { login: 'signed-in-user' } });
        return send(201, pullJson(key, pullsOf(key)[n - 1] as FakePull));
      }
      if (req.method === 'POST' && rest === '/hooks') {
        if (!authed) return send(401, { message: 'Requires authentication' });
        const config = (body.config ?? {}) as { url?: string };
        if (!config.url) return send(422, { message: 'Validation Failed' });
        const hook = { repo: key, id: nextHook++, events: (body.events as string[]) ?? ['push'], url: config.url };
        hooks.push(hook);
        return send(201, { id: hook.id, name: 'web', active: true, events: hook.events, config: { url: hook.url, content_type: 'json' }, created_at: githubTime() });
      }
      return send(404, { message: 'Not Found' });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const fake: FakeCodehost = {
    url: base,
    clientId,
    token,
    requests,
    pulls,
    hooks,
    authorize(userCode) {
      for (const d of devices.values()) if (d.userCode === userCode) d.authorized = true;
    },
    addPull,
    merge(owner, repo, n) {
      const p = pullsOf(`${owner}/${repo}`).find((x) => x.number === n);
      if (!p) throw new Error(`no pull ${n}`);
      p.state = 'closed';
      p.merged = true;
      p.merged_at = new Date().toISOString();
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  return fake;
}

/** The code host's own timestamp form: whole seconds, `Z` (`2026-01-02T03:04:05Z`). */
function githubTime(): string {
  return new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
}
