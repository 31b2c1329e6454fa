/**
 * Flow platforms for the tests: one HTTP server on 127.0.0.1 playing every source type at once, each with the
 * routes of the real package (docs/scheduler.md#what-was-checked-against-the-real-packages). A source URL is
 * `<url>/<source type>/<anything>` (test/contract/hooks.py gives each source its own), so URLs stay unique while
 * health, version, flow lists and runs answer like that type's platform. Requests are recorded.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

const HEALTH: Record<string, { path: string; status: string }> = {
  'flow-builder': { path: '/health', status: 'ok' },
  langflow: { path: '/health', status: 'ok' },
  'automagik-hive': { path: '/api/v1/health', status: 'success' },
  // the PyPI Hive 1.0 (AgentOS) alone: no /api/v1/health, only AgentOS's /health (a URL of type automagik-hive-agentos)
  'automagik-hive-agentos': { path: '/health', status: 'ok' },
  'automagik-agents': { path: '/health', status: 'healthy' },
};

const LANGFLOW_FLOW = { id: '5e6f7a8b-9c0d-4e1f-8a2b-3c4d5e6f7a8b', name: 'Flow one', endpoint_name: 'flow-one', description: '', updated_at: '2026-01-02T03:04:05Z', is_component: false };

// every type lists a flow named "Flow one": the contract test's flow tasks name it (hooks.py)
const HIVE_AGENTS = [
  { id: 'support-bot', name: 'Support Bot', description: 'answers' },
  { id: 'flow-one', name: 'Flow one', description: '' },
];

/** What each type lists (in the real package's shape) and the path its runs take. */
const PLATFORM: Record<string, { flowsPath: string; flows: unknown; run: RegExp }> = {
  // LangFlow: header_flows=true answers the caller's flows without their graphs
  'flow-builder': { flowsPath: '/api/v1/flows/', flows: [LANGFLOW_FLOW], run: /^\/api\/v1\/run\/([^/]+)$/ },
  langflow: { flowsPath: '/api/v1/flows/', flows: [LANGFLOW_FLOW], run: /^\/api\/v1\/run\/([^/]+)$/ },
  // automagik-hive 1.0 (Agno AgentOS): GET /agents, POST /agents/{id}/runs with form fields
  'automagik-hive': { flowsPath: '/agents', flows: HIVE_AGENTS, run: /^\/agents\/([^/]+)\/runs$/ },
  'automagik-hive-agentos': { flowsPath: '/agents', flows: HIVE_AGENTS, run: /^\/agents\/([^/]+)\/runs$/ },
  // automagik-agents as automagik-spark drives it: GET /api/v1/agents, POST /api/v1/agent/{name}/run
  'automagik-agents': {
    flowsPath: '/api/v1/agents',
    flows: [
      { name: 'simple', type: 'simple', model: 'x', description: 'a simple agent' },
      { name: 'Flow one', type: 'simple', model: 'x', description: '' },
    ],
    run: /^\/api\/v1\/agent\/([^/]+)\/run$/,
  },
};

export interface FakePlatforms {
  url: string;
  requests: { type: string; method: string; path: string; query: string; contentType: string | undefined; authorization: string | undefined; body: string }[];
  close(): Promise<void>;
}

export async function startFakePlatforms(): Promise<FakePlatforms> {
  const requests: FakePlatforms['requests'] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const send = (status: number, body: unknown) => res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
      const [fullPath = '/', query = ''] = (req.url ?? '/').split('?');
      const m = /^\/([a-z-]+)\/[^/]+(\/.*)?$/.exec(fullPath);
      const type = m?.[1] ?? '';
      const rest = m?.[2] ?? '/';
      const body = Buffer.concat(chunks).toString('utf8');
      requests.push({ type, method: req.method ?? 'GET', path: rest, query, contentType: req.headers['content-type'], authorization: req.headers.authorization, body });
      const health = HEALTH[type];
      const platform = PLATFORM[type];
      if (!health || !platform) return send(404, { detail: 'no such platform' });
      if (req.method === 'GET' && rest === health.path) return send(200, { status: health.status });
      if (req.method === 'GET' && (rest === '/api/v1/version' || (type === 'automagik-agents' && rest === '/'))) {
        return send(200, { version: '1.0.0', package: `fake-${type}` });
      }
      if (req.method === 'GET' && rest === platform.flowsPath) return send(200, platform.flows);
      const run = platform.run.exec(rest);
      if (req.method === 'POST' && run) {
        if (type.startsWith('automagik-hive') && !String(req.headers['content-type']).startsWith('application/x-www-form-urlencoded')) {
          return send(422, { detail: [{ type: 'missing', loc: ['body', 'message'], msg: 'Field required' }] }); // AgentOS takes form fields
        }
        return send(200, { content: `ran ${decodeURIComponent(run[1] as string)}`, session_id: 'contract' });
      }
      return send(404, { detail: 'Not Found' });
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}
