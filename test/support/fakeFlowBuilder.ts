/**
 * A fake flow-builder platform: a real HTTP server on 127.0.0.1 answering GET /health, GET /api/v1/version,
 * GET /api/v1/flows/ and POST /api/v1/run/{flow}. `mode` switches its behaviour: ok, down (connection refused),
 * error (HTTP 500) or bad (`status: bad`). Requests are recorded (with the x-api-key header they carried).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export type FakeMode = 'ok' | 'error' | 'bad';

export interface FakeFlowBuilder {
  url: string;
  mode: FakeMode;
  requests: { method: string; path: string; apiKey: string | undefined; body: unknown }[];
  /** stops listening: the platform is down (connection refused) until start() */
  stop(): Promise<void>;
  start(): Promise<void>;
  close(): Promise<void>;
}

export async function startFakeFlowBuilder(): Promise<FakeFlowBuilder> {
  let port = 0;
  const fake: FakeFlowBuilder = {
    url: '',
    mode: 'ok',
    requests: [],
    stop: async () => undefined,
    start: async () => undefined,
    close: async () => undefined,
  };
  const send = (res: http.ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      let body: unknown = null;
      try {
        body = text ? JSON.parse(text) : null;
      } catch {
        body = text;
      }
      const path = (req.url ?? '/').split('?')[0] ?? '/';
      const apiKey = req.headers['x-api-key'];
      fake.requests.push({ method: req.method ?? 'GET', path, apiKey: Array.isArray(apiKey) ? apiKey[0] : apiKey, body });
      if (fake.mode === 'error') return send(res, 500, { detail: 'internal error' });
      if (req.method === 'GET' && path === '/health') return send(res, 200, { status: fake.mode === 'bad' ? 'bad' : 'ok' });
      if (req.method === 'GET' && path === '/api/v1/version') return send(res, 200, { version: '1.4.2', package: 'fake-flow-builder' });
      if (req.method === 'GET' && (path === '/api/v1/flows/' || path === '/api/v1/flows')) {
        return send(res, 200, [
          { id: 'flow-1', name: 'Summarise', description: 'summarises text' },
          { id: 'flow-2', name: 'Translate', description: '' },
        ]);
      }
      const run = /^\/api\/v1\/run\/([^/]+)$/.exec(path);
      if (req.method === 'POST' && run) {
        const flow = decodeURIComponent(run[1] as string);
        if (flow === 'missing') return send(res, 404, { detail: 'Flow not found' });
        const input = (body as { input_value?: string } | null)?.input_value ?? '';
        return send(res, 200, { outputs: [{ flow, result: `ran ${flow} with ${input}` }] });
      }
      send(res, 404, { detail: 'Not Found' });
    });
  });
  const listen = () =>
    new Promise<void>((resolve) => {
      server.listen(port, '127.0.0.1', () => {
        port = (server.address() as AddressInfo).port;
        fake.url = `http://127.0.0.1:${port}`;
        resolve();
      });
    });
  await listen();
  fake.stop = () =>
    new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  fake.start = listen;
  fake.close = async () => {
    if (server.listening) await fake.stop();
  };
  return fake;
}
