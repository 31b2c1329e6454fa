/**
 * A flow platform that answers a redirect: Armada follows it within the source's own origin only (with the key), and
 * a redirect to another origin is an error before anything is sent there (docs/scheduler.md#platforms). fetch's own
 * following went wherever the answer pointed, and at first dropped only Authorization, so X-API-Key went along.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { PlatformError, PlatformUnreachable, checkHealth, runRemoteFlow } from '../../lib/scheduler/platforms';

interface Seen {
  method: string;
  path: string;
  apiKey?: string;
  authorization?: string;
}

function server(handler: (req: http.IncomingMessage, res: http.ServerResponse, seen: Seen[]) => void): Promise<{ url: string; seen: Seen[]; close(): Promise<void> }> {
  const seen: Seen[] = [];
  const s = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      seen.push({ method: req.method ?? '', path: req.url ?? '', apiKey: req.headers['x-api-key'] as string | undefined, authorization: req.headers.authorization });
      handler(req, res, seen);
    });
  });
  return new Promise((resolve) =>
    s.listen(0, '127.0.0.1', () =>
      resolve({ url: `http://127.0.0.1:${(s.address() as AddressInfo).port}`, seen, close: () => new Promise((r) => s.close(() => r())) }),
    ),
  );
}

test('a redirect to another origin is not followed (nothing reaches it); one within the origin is, with the key', async () => {
  const elsewhere = await server((_req, res) => {
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ outputs: [], session_id: 'elsewhere' }));
  });
  const platform = await server((req, res) => {
    if (req.url?.startsWith('/api/v1/run/same')) {
      res.writeHead(307, { location: '/api/v1/run/other-name?stream=false' });
      return res.end();
    }
    if (req.url?.startsWith('/api/v1/run/other-name')) {
      res.setHeader('content-type', 'application/json');
      return res.end(JSON.stringify({ outputs: [], session_id: 'same' }));
    }
    // credentials, path and query of the Location are named nowhere: its origin only
    res.writeHead(req.method === 'GET' ? 302 : 307, { location: `${elsewhere.url.replace('//', '//armada:loc-s3cret@')}/collect?token=abc` });
    res.end();
  });
  try {
    const target = { sourceType: 'flow-builder' as const, url: platform.url, apiKey: 'source-key-1234567890' };
    const away = await runRemoteFlow(target, 'away', 'hi', 5000).catch((e: unknown) => e);
    expect(away).toBeInstanceOf(PlatformError);
    expect(away).not.toBeInstanceOf(PlatformUnreachable); // an answer came: a flow run is not sent again
    expect((away as PlatformError).httpStatus).toBe(307);
    const refused = `a redirect to another origin (${elsewhere.url}), which is not followed: Armada calls a source's own origin (${platform.url}) only; if the platform has moved there, change the source's url`;
    expect((away as Error).message).toBe(`POST /api/v1/run/away answered HTTP 307, ${refused}`);
    await expect(checkHealth(target, 5000)).rejects.toThrow(`GET /health answered HTTP 302, ${refused}`);
    expect(elsewhere.seen).toEqual([]);

    await runRemoteFlow(target, 'same', 'hi', 5000);
    expect(platform.seen.filter((s) => s.path.startsWith('/api/v1/run/')).map((s) => [s.path.split('?')[0], s.apiKey])).toEqual([
      ['/api/v1/run/away', 'source-key-1234567890'],
      ['/api/v1/run/same', 'source-key-1234567890'],
      ['/api/v1/run/other-name', 'source-key-1234567890'],
    ]);
  } finally {
    await platform.close();
    await elsewhere.close();
  }
});

test('a redirect that cannot be followed is the task\'s final error (PlatformError), not a platform to try again', async () => {
  const platform = await server((req, res) => {
    // within the origin, but with a user name and password: fetch cannot send it (before, its TypeError, quoting the
    // password, made the run a PlatformUnreachable, sent again)
    const withCredentials = `${`http://${req.headers.host}`.replace('//', '//me:s3cret@')}/elsewhere`;
    res.writeHead(302, { location: req.url?.startsWith('/api/v1/run/c') ? withCredentials : 'ftp://files.example/flow' });
    res.end();
  });
  try {
    const err = await runRemoteFlow({ sourceType: 'flow-builder', url: platform.url, apiKey: 'k-1234567890' }, 'f', 'hi', 5000).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PlatformError);
    expect(err).not.toBeInstanceOf(PlatformUnreachable);
    expect((err as Error).message).toBe('POST /api/v1/run/f failed: redirected (HTTP 302) to a ftp: URL, which is not followed');
    const credentials = await runRemoteFlow({ sourceType: 'flow-builder', url: platform.url, apiKey: 'k-1234567890' }, 'c', 'hi', 5000).catch((e: unknown) => e);
    expect(credentials).toBeInstanceOf(PlatformError);
    expect(credentials).not.toBeInstanceOf(PlatformUnreachable);
    expect((credentials as Error).message).toBe('POST /api/v1/run/c failed: redirected (HTTP 302) to a URL with a user name or password, which is not followed');
  } finally {
    await platform.close();
  }
});
