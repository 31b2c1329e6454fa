/**
 * The task service serves the board (api/task/webAssets.ts): index.html at `/` and at the board's own paths,
 * hashed assets with a long cache, public even when a key is configured; /api and /ws unchanged (JSON 404, 401,
 * 405, not in the OpenAPI document). A temporary ARMADA_WEB_DIR stands in for web/dist.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { startTestStack, type TestStack } from '../support/harness';

const KEY = 'web-serving-key-0123456789';
const INDEX = '<!doctype html><html><body><div id="root"></div><script type="module" src="/assets/index-Ab12Cd34.js"></script></body></html>';
const SCRIPT = 'console.log("board");\n';

let stack: TestStack;
let app: FastifyInstance;
let webDir: string;

beforeAll(async () => {
  webDir = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-web-'));
  fs.mkdirSync(path.join(webDir, 'assets'));
  fs.writeFileSync(path.join(webDir, 'index.html'), INDEX);
  fs.writeFileSync(path.join(webDir, 'assets', 'index-Ab12Cd34.js'), SCRIPT);
  stack = await startTestStack({ env: { ARMADA_WEB_DIR: webDir, ARMADA_TASK_API_KEY: KEY } });
  app = stack.app('task');
}, 120_000);
afterAll(async () => {
  await stack?.close();
  fs.rmSync(webDir, { recursive: true, force: true });
});

const html = { accept: 'text/html,application/xhtml+xml,*/*;q=0.8' };
const auth = { authorization: `Bearer ${KEY}` };

test('/ answers index.html, not cached, without a key', async () => {
  const res = await app.inject({ method: 'GET', url: '/', headers: html });
  expect(res.statusCode).toBe(200);
  expect(res.headers['content-type']).toMatch(/^text\/html/);
  expect(res.headers['cache-control']).toBe('no-cache');
  expect(res.headers['content-security-policy']).toContain("default-src 'self'");
  expect(res.body).toBe(INDEX);
});

test("the board's own paths answer index.html to a browser (SPA fallback), JSON 404 to anything else", async () => {
  for (const url of ['/projects', '/projects/p-123', '/tasks/t-1', '/approvals', '/scheduler', '/agents', '/traces', '/settings', '/projects/p-1/?status=pending']) {
    const res = await app.inject({ method: 'GET', url, headers: html });
    expect({ url, status: res.statusCode, body: res.body }).toEqual({ url, status: 200, body: INDEX });
  }
  const json = await app.inject({ method: 'GET', url: '/projects/p-123', headers: { accept: 'application/json' } });
  expect(json.statusCode).toBe(404);
  expect(json.json()).toMatchObject({ success: false, error: { code: 'NOT_FOUND' } });
});

test('a hashed asset is served with its type and a one-year immutable cache; anything else under /assets is a 404', async () => {
  const res = await app.inject({ method: 'GET', url: '/assets/index-Ab12Cd34.js' });
  expect(res.statusCode).toBe(200);
  expect(res.headers['content-type']).toMatch(/^text\/javascript/);
  expect(res.headers['cache-control']).toBe('public, max-age=31536000, immutable');
  expect(res.body).toBe(SCRIPT);
  for (const url of ['/assets/missing-Zz99.js', '/assets/..%2Findex.html', '/assets/sub/index-Ab12Cd34.js', '/assets/.hidden']) {
    const miss = await app.inject({ method: 'GET', url });
    expect({ url, status: miss.statusCode }).toEqual({ url, status: 404 });
    expect(miss.json()).toMatchObject({ success: false, error: { code: 'NOT_FOUND' } });
  }
});

test('/api and /ws are unchanged: JSON 404 for an unknown route, 401 without the key, 405 with Allow', async () => {
  const missing = await app.inject({ method: 'GET', url: '/api/nonexistent', headers: { ...html, ...auth } });
  expect(missing.statusCode).toBe(404);
  expect(missing.headers['content-type']).toMatch(/application\/json/);
  expect(missing.json()).toMatchObject({ success: false, error: { code: 'NOT_FOUND', message: 'Route GET /api/nonexistent not found' } });

  const noKey = await app.inject({ method: 'GET', url: '/api/projects', headers: html });
  expect(noKey.statusCode).toBe(401);
  expect(noKey.json()).toMatchObject({ success: false, error: { code: 'UNAUTHORIZED' } });

  const put = await app.inject({ method: 'PUT', url: '/api/projects', headers: { ...auth, 'content-type': 'application/json' }, payload: '{}' });
  expect(put.statusCode).toBe(405);
  expect(put.headers.allow).toBe('GET, HEAD, OPTIONS, POST');

  const unknownTop = await app.inject({ method: 'GET', url: '/nope', headers: { accept: 'application/json', ...auth } });
  expect(unknownTop.statusCode).toBe(404);
  expect(unknownTop.json()).toMatchObject({ success: false, error: { code: 'NOT_FOUND' } });
});

test("an unknown path a browser opens answers index.html with a 404 (the board's not-found screen), without a key; the API's paths and non-HTML requests keep the JSON 404", async () => {
  for (const url of ['/nope', '/nope/deeper?x=1', '/projectsx']) {
    const res = await app.inject({ method: 'GET', url, headers: html });
    expect({ url, status: res.statusCode, type: res.headers['content-type'], cache: res.headers['cache-control'], body: res.body }).toEqual({
      url,
      status: 404,
      type: expect.stringMatching(/^text\/html/),
      cache: 'no-cache',
      body: INDEX,
    });
  }
  const head = await app.inject({ method: 'HEAD', url: '/nope', headers: html });
  expect(head.statusCode).toBe(404);
  expect(head.headers['content-type']).toMatch(/^text\/html/);

  const asked: [string, string, Record<string, string>][] = [
    ['GET', '/api/nope', { ...html, ...auth }],
    ['GET', '/ws/nope', { ...html, ...auth }],
    ['GET', '/svc/nope', { ...html, ...auth }],
    ['GET', '/nope', { accept: 'application/json', ...auth }],
    ['GET', '/nope', { accept: '*/*', ...auth }],
    ['GET', '/nope', auth],
    ['POST', '/nope', { ...html, ...auth }],
  ];
  for (const [method, url, headers] of asked) {
    const res = await app.inject({ method: method as 'GET' | 'POST', url, headers });
    expect({ method, url, accept: headers.accept, status: res.statusCode, type: res.headers['content-type'] }).toEqual({
      method,
      url,
      accept: headers.accept,
      status: 404,
      type: expect.stringMatching(/^application\/json/),
    });
    expect(res.json()).toMatchObject({ success: false, error: { code: 'NOT_FOUND' } });
  }
  // the API's unknown paths still ask a browser without a key for one
  const noKey = await app.inject({ method: 'GET', url: '/api/nope', headers: html });
  expect(noKey.statusCode).toBe(401);
  expect(noKey.json()).toMatchObject({ success: false, error: { code: 'UNAUTHORIZED' } });
});

test('the static routes are not in the OpenAPI document', async () => {
  const doc = (await app.inject({ method: 'GET', url: '/api/openapi.json', headers: auth })).json() as { paths: Record<string, unknown> };
  const paths = Object.keys(doc.paths);
  expect(paths.length).toBeGreaterThan(10);
  expect(paths.filter((p) => !p.startsWith('/api/') && !p.startsWith('/ws'))).toEqual([]);
});

test('without a build, / says how to make one', async () => {
  fs.renameSync(path.join(webDir, 'index.html'), path.join(webDir, 'index.html.off'));
  try {
    const res = await app.inject({ method: 'GET', url: '/', headers: html });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    expect(res.body).toContain('npm run build:web');
  } finally {
    fs.renameSync(path.join(webDir, 'index.html.off'), path.join(webDir, 'index.html'));
  }
});
