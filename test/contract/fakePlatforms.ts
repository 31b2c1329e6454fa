/**
 * The contract test's flow platforms: one HTTP server on 127.0.0.1 playing every source type at once. A source
 * URL is `<url>/<source type>/<anything>` (test/contract/hooks.py gives each source its own), so URLs stay unique
 * while health, version, flow lists and runs answer like that type's platform.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

const HEALTH: Record<string, { path: string; status: string }> = {
  'flow-builder': { path: '/health', status: 'ok' },
  langflow: { path: '/health', status: 'ok' },
  'automagik-hive': { path: '/api/v1/health', status: 'success' },
  'automagik-agents': { path: '/health', status: 'healthy' },
};

export interface FakePlatforms {
  url: string;
  close(): Promise<void>;
}

export async function startFakePlatforms(): Promise<FakePlatforms> {
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const send = (status: number, body: unknown) => res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
      const m = /^\/([a-z-]+)\/[^/]+(\/.*)?$/.exec((req.url ?? '/').split('?')[0] as string);
      const type = m?.[1] ?? '';
      const rest = m?.[2] ?? '/';
      const health = HEALTH[type];
      if (!health) return send(404, { detail: 'no such platform' });
      if (req.method === 'GET' && rest === health.path) return send(200, { status: health.status });
      if (req.method === 'GET' && rest === '/api/v1/version') return send(200, { version: '1.0.0', package: `fake-${type}` });
      if (req.method === 'GET') return send(200, [{ id: 'flow-1', name: 'Flow one', description: '' }]);
      if (req.method === 'POST') return send(200, { outputs: [], session_id: 'contract' });
      return send(405, { detail: 'method not allowed' });
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}
