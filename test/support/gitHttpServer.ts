/**
 * A git smart-HTTP server on 127.0.0.1 that requires Basic auth: a small node http server in front of the real
 * `git http-backend` (CGI), serving the bare repositories under `root`. A request without the right credentials is a
 * 401 with `WWW-Authenticate: Basic`, as a private code host answers; pushes are allowed (REMOTE_USER is set).
 */
import { spawn } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface GitHttpServer {
  /** http://127.0.0.1:<port> */
  url: string;
  /** Every request: its method, path (with query) and whether its credentials were accepted. */
  requests: { method: string; path: string; authorized: boolean; authorization?: string }[];
  close(): Promise<void>;
}

/**
 * `beforeUploadPack`: awaited before a fetch's or clone's pack request (`POST …/git-upload-pack`) is answered, its body
 * not read yet: the client has the refs and waits for the pack (a slow or stalled remote mid-clone).
 */
export async function startGitHttpServer(
  root: string,
  user: string,
  password: string,
  opts: { beforeUploadPack?: () => Promise<void> } = {},
): Promise<GitHttpServer> {
  const expected = `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
  const requests: GitHttpServer['requests'] = [];
  const answer = (req: http.IncomingMessage, res: http.ServerResponse, url: URL) => {
    if (req.socket.destroyed || res.destroyed) return; // the client went away while it was held
    const cgi = spawn('git', ['http-backend'], {
      env: {
        PATH: process.env.PATH ?? '',
        GIT_PROJECT_ROOT: root,
        GIT_HTTP_EXPORT_ALL: '1',
        REQUEST_METHOD: req.method ?? 'GET',
        PATH_INFO: decodeURIComponent(url.pathname),
        QUERY_STRING: url.search.replace(/^\?/, ''),
        CONTENT_TYPE: req.headers['content-type'] ?? '',
        ...(req.headers['content-length'] ? { CONTENT_LENGTH: req.headers['content-length'] } : {}),
        ...(req.headers['content-encoding'] ? { HTTP_CONTENT_ENCODING: req.headers['content-encoding'] } : {}),
        ...(req.headers['git-protocol'] ? { GIT_PROTOCOL: String(req.headers['git-protocol']) } : {}),
        REMOTE_USER: user,
        REMOTE_ADDR: '127.0.0.1',
      },
      stdio: ['pipe', 'pipe', 'ignore'],
    });
    req.pipe(cgi.stdin);
    // the CGI answer: headers up to the first empty line, then the body
    let head = Buffer.alloc(0);
    let started = false;
    cgi.stdout.on('data', (chunk: Buffer) => {
      if (started) {
        res.write(chunk);
        return;
      }
      head = Buffer.concat([head, chunk]);
      const end = head.indexOf('\r\n\r\n');
      if (end < 0) return;
      started = true;
      let status = 200;
      const headers: Record<string, string> = {};
      for (const line of head.subarray(0, end).toString('latin1').split('\r\n')) {
        const colon = line.indexOf(':');
        if (colon < 0) continue;
        const name = line.slice(0, colon).trim();
        const value = line.slice(colon + 1).trim();
        if (name.toLowerCase() === 'status') status = Number.parseInt(value, 10);
        else headers[name] = value;
      }
      res.writeHead(status, headers);
      res.write(head.subarray(end + 4));
    });
    cgi.on('close', () => {
      if (!started) res.writeHead(500).end();
      else res.end();
    });
  };
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const authorized = req.headers.authorization === expected;
    requests.push({ method: req.method ?? '', path: `${url.pathname}${url.search}`, authorized, authorization: req.headers.authorization });
    if (!authorized) {
      req.resume();
      res.writeHead(401, { 'WWW-Authenticate': 'Basic realm="test"', 'Content-Type': 'text/plain' }).end('authentication required\n');
      return;
    }
    if (opts.beforeUploadPack && req.method === 'POST' && url.pathname.endsWith('/git-upload-pack')) {
      req.pause();
      opts.beforeUploadPack().then(
        () => answer(req, res, url),
        () => res.writeHead(500).end(),
      );
      return;
    }
    answer(req, res, url);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
