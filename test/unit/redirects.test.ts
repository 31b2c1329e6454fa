/** lib/http/redirects.ts over real sockets: redirects followed as fetch does, keys kept to their own origin. */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { fetchFollowingRedirects, MAX_REDIRECTS, RedirectError } from '../../lib/http/redirects';

interface Seen {
  server: 'a' | 'b';
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}
const seen: Seen[] = [];
let a: http.Server;
let b: http.Server;
let urlA: string;
let urlB: string;

function serve(name: 'a' | 'b', route: (req: http.IncomingMessage, res: http.ServerResponse) => boolean): http.Server {
  return http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => {
      body += c;
    });
    req.on('end', () => {
      seen.push({ server: name, method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
      if (!route(req, res)) res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
    });
  });
}

beforeAll(async () => {
  a = serve('a', (req, res) => {
    const go = (status: number, location: string) => {
      res.writeHead(status, { location }).end();
      return true;
    };
    if (req.url === '/same') return go(302, '/final');
    if (req.url === '/away') return go(302, `${urlB}/landed?x=1`);
    if (req.url === '/see-other') return go(303, '/final');
    if (req.url === '/temporary') return go(307, '/final');
    if (req.url === '/found') return go(302, '/final');
    if (req.url === '/data') return go(302, 'data:text/plain,hello');
    if (req.url === '/credentials') return go(302, `${urlA.replace('//', '//me:s3cret@')}/final`);
    if (req.url?.startsWith('/loop')) return go(302, `/loop${Number(req.url.slice(5) || 0) + 1}`);
    return false;
  });
  b = serve('b', (req, res) => {
    if (req.url !== '/back') return false;
    res.writeHead(302, { location: `${urlA}/final` }).end();
    return true;
  });
  for (const s of [a, b]) await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  urlA = `http://127.0.0.1:${(a.address() as AddressInfo).port}`;
  // another origin: the same host by another name and port
  urlB = `http://localhost:${(b.address() as AddressInfo).port}`;
});
afterAll(async () => {
  for (const s of [a, b]) await new Promise((r) => s.close(r));
});
beforeEach(() => {
  seen.length = 0;
});

const keyed = { 'x-api-key': 'SECRET', authorization: 'Bearer SECRET', 'x-extra': 'kept?' };

test('a redirect to another origin: the key headers and Authorization stay behind; the same origin keeps them', async () => {
  const away = await fetchFollowingRedirects(`${urlA}/away`, { headers: keyed }, ['X-API-Key', 'x-extra']);
  expect(away.status).toBe(200);
  expect(await away.json()).toEqual({ ok: true });
  expect(seen.map((s) => `${s.server} ${s.url}`)).toEqual(['a /away', 'b /landed?x=1']);
  expect(seen[1]?.headers['x-api-key']).toBeUndefined();
  expect(seen[1]?.headers.authorization).toBeUndefined();
  expect(seen[1]?.headers['x-extra']).toBeUndefined();

  seen.length = 0;
  await fetchFollowingRedirects(`${urlA}/same`, { headers: keyed }, ['x-api-key']);
  expect(seen.map((s) => `${s.server} ${s.url} ${s.headers['x-api-key']} ${s.headers.authorization}`)).toEqual(['a /same SECRET Bearer SECRET', 'a /final SECRET Bearer SECRET']);

  // back to the first origin after another: still without them
  seen.length = 0;
  await fetchFollowingRedirects(`${urlB}/back`, { headers: keyed }, ['x-api-key']);
  expect(seen.map((s) => `${s.server} ${s.url} ${s.headers['x-api-key']}`)).toEqual(['b /back SECRET', 'a /final undefined']);
});

test('methods and bodies as fetch: 303 and a POST\'s 302 go on as a GET without the body, 307 resends it', async () => {
  const post = { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"n":1}' };
  await fetchFollowingRedirects(`${urlA}/see-other`, post, []);
  await fetchFollowingRedirects(`${urlA}/found`, post, []);
  await fetchFollowingRedirects(`${urlA}/temporary`, post, []);
  expect(seen.filter((s) => s.url === '/final').map((s) => [s.method, s.body, s.headers['content-type']])).toEqual([
    ['GET', '', undefined],
    ['GET', '', undefined],
    ['POST', '{"n":1}', 'application/json'],
  ]);
});

test('a redirect to a data: URL, or past the 20th, is refused', async () => {
  await expect(fetchFollowingRedirects(`${urlA}/data`, {}, [])).rejects.toThrow('redirected (HTTP 302) to a data: URL, which is not followed');
  await expect(fetchFollowingRedirects(`${urlA}/loop`, {}, [])).rejects.toThrow(`redirected more than ${MAX_REDIRECTS} times`);
  expect(seen.filter((s) => s.url.startsWith('/loop'))).toHaveLength(MAX_REDIRECTS + 1);
});

test('a redirect to a URL with a user name or password, even within the origin, is refused without showing them', async () => {
  // before, followed into fetch's own refusal (a TypeError quoting the URL, password and all), which every caller read
  // as a service that cannot be reached: the scheduler retried such a flow run as a platform that is down
  const refused = fetchFollowingRedirects(`${urlA}/credentials`, {}, [], { otherOrigins: 'refuse' });
  await expect(refused).rejects.toThrow(new RedirectError('redirected (HTTP 302) to a URL with a user name or password, which is not followed'));
  expect(seen.map((s) => s.url)).toEqual(['/credentials']);
});
