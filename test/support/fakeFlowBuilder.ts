/**
 * A fake flow-builder platform that answers like LangFlow 1.13 (checked against the real one, docs/scheduler.md): a
 * real HTTP server on 127.0.0.1 with GET /health, GET /api/v1/version, GET /api/v1/flows/ (the caller's flows plus
 * starter examples unless `remove_example_flows=true`, whole graphs unless `header_flows=true`, saved components
 * too) and POST /api/v1/run/{id or endpoint_name}. With `requiredKey` set, the flow list and runs need that key in
 * `x-api-key` and answer LangFlow's 403 texts otherwise. `mode` switches its behaviour: ok, error (HTTP 500) or bad
 * (`status: bad`); stop() makes it refuse connections. `rawAnswers` replaces the text of its 200 answers to the
 * version, the flow list or a run (odd platforms); `redirectTo` answers every request with a 302 there; `withoutFlows`
 * (ids) are flows this instance does not have (not listed, a run answers 404). Requests are recorded (with the
 * x-api-key header they carried).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export type FakeMode = 'ok' | 'error' | 'bad';

export interface FakeFlow {
  id: string;
  name: string;
  endpoint_name: string | null;
  description: string;
  updated_at: string;
  folder_id: string;
  is_component: boolean;
}

const USER_FOLDER = '6a1f3c52-0d47-4c8e-9a51-1b2c3d4e5f60';
const STARTER_FOLDER = '7b2e4d63-1e58-4d9f-8b62-2c3d4e5f6a71';

/** The runnable flows of the fake: ids are UUIDs like LangFlow's; two flows share the display name "Translate". */
export const FAKE_FLOWS = {
  summarise: { id: '0f6c1d2e-3a4b-4c5d-8e6f-7a8b9c0d1e2f', name: 'Summarise', endpoint_name: 'summarise', description: 'summarises text' },
  translate: { id: '1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d', name: 'Translate', endpoint_name: null, description: '' },
  translateV2: { id: '2b3c4d5e-6f7a-4b8c-9d0e-1f2a3b4c5d6e', name: 'Translate', endpoint_name: 'translate-v2', description: 'second version' },
} as const;
const UPDATED = '2026-01-02T03:04:05Z';

const ALL_FLOWS: FakeFlow[] = [
  ...Object.values(FAKE_FLOWS).map((f) => ({ ...f, updated_at: UPDATED, folder_id: USER_FOLDER, is_component: false })),
  // a saved component: listed by LangFlow, not runnable
  { id: '3c4d5e6f-7a8b-4c9d-8e1f-2a3b4c5d6e7f', name: 'My component', endpoint_name: null, description: '', updated_at: UPDATED, folder_id: USER_FOLDER, is_component: true },
  // a starter example: listed unless remove_example_flows=true; running it answers 404 like the real one
  { id: '4d5e6f7a-8b9c-4d0e-9f2a-3b4c5d6e7f80', name: 'Basic Prompting', endpoint_name: null, description: 'starter', updated_at: UPDATED, folder_id: STARTER_FOLDER, is_component: false },
];

export interface FakeFlowBuilder {
  url: string;
  mode: FakeMode;
  /** when set, GET /api/v1/flows/ and POST /api/v1/run/… need this x-api-key (LangFlow's 403 texts otherwise) */
  requiredKey: string | null;
  /** delays answers to runs (to test timeouts) */
  runDelayMs: number;
  /** when set, a run answers a JSON string this many bytes long, streamed in 64 KiB writes (to test answer limits) */
  runAnswerBytes: number;
  /** bytes of such an answer written before the client went away */
  runAnswerWritten: number;
  /**
   * when set, the JSON text of the 200 answer to GET /api/v1/version, GET /api/v1/flows/ or a run; `runCut`: a run's
   * answer whose first half is written, then the connection is dropped
   */
  rawAnswers: { version?: string; flows?: string; run?: string; runCut?: string };
  /** when set, every request is answered 302 with `Location: <redirectTo><the request's path and query>` */
  redirectTo: string | null;
  /** ids of flows this instance lacks: not in its flow list, and a run of one answers 404 */
  withoutFlows: string[];
  /** when set, GET /api/v1/flows/ is answered once this promise settles (to hold a caller between two steps) */
  flowsHeld: Promise<void> | null;
  /** every request, with the time it arrived (`at`, epoch ms) */
  requests: { method: string; path: string; query: string; apiKey: string | undefined; body: unknown; at: number }[];
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
    requiredKey: null,
    runDelayMs: 0,
    runAnswerBytes: 0,
    runAnswerWritten: 0,
    rawAnswers: {},
    redirectTo: null,
    withoutFlows: [],
    flowsHeld: null,
    requests: [],
    stop: async () => undefined,
    start: async () => undefined,
    close: async () => undefined,
  };
  const send = (res: http.ServerResponse, status: number, body: unknown) => {
    if (res.destroyed) return;
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  };
  const sendRaw = (res: http.ServerResponse, text: string) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(text);
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
      const [path = '/', query = ''] = (req.url ?? '/').split('?');
      const params = new URLSearchParams(query);
      const header = req.headers['x-api-key'];
      const apiKey = Array.isArray(header) ? header[0] : header;
      fake.requests.push({ method: req.method ?? 'GET', path, query, apiKey, body, at: Date.now() });
      if (fake.redirectTo !== null) return res.writeHead(302, { location: `${fake.redirectTo}${req.url ?? '/'}` }).end();
      if (fake.mode === 'error') return send(res, 500, { detail: 'internal error' });
      if (req.method === 'GET' && path === '/health') return send(res, 200, { status: fake.mode === 'bad' ? 'bad' : 'ok' });
      if (req.method === 'GET' && path === '/api/v1/version' && fake.rawAnswers.version !== undefined) return sendRaw(res, fake.rawAnswers.version);
      if (req.method === 'GET' && path === '/api/v1/version') return send(res, 200, { version: '1.4.2', package: 'fake-flow-builder' });
      // LangFlow's own texts (1.13): no key at all, a wrong key on the flow list, a wrong key on a run
      const keyRefusal = (wrong: string) => (!fake.requiredKey || apiKey === fake.requiredKey ? null : apiKey ? wrong : 'An API key must be passed as query or header');
      if (req.method === 'GET' && path === '/api/v1/flows/') {
        const answerFlows = () => {
          const refused = keyRefusal('Invalid API key');
          if (refused) return send(res, 403, { detail: refused });
          if (fake.rawAnswers.flows !== undefined) return sendRaw(res, fake.rawAnswers.flows);
          const flows = ALL_FLOWS.filter((f) => (params.get('remove_example_flows') !== 'true' || f.folder_id !== STARTER_FOLDER) && !fake.withoutFlows.includes(f.id));
          const graph = { nodes: [{ id: 'ChatInput-x', data: { type: 'ChatInput' } }], edges: [] };
          return send(res, 200, params.get('header_flows') === 'true' ? flows : flows.map((f) => ({ ...f, data: graph })));
        };
        if (fake.flowsHeld) return void fake.flowsHeld.then(answerFlows);
        return answerFlows();
      }
      const run = /^\/api\/v1\/run\/([^/]+)$/.exec(path);
      if (req.method === 'POST' && run) {
        const refused = keyRefusal('Invalid or missing API key');
        if (refused) return send(res, 403, { detail: refused });
        const wanted = decodeURIComponent(run[1] as string);
        const flow = ALL_FLOWS.find((f) => f.folder_id === USER_FOLDER && !f.is_component && !fake.withoutFlows.includes(f.id) && (f.id === wanted || f.endpoint_name === wanted));
        if (!flow) return send(res, 404, { detail: `Flow identifier ${wanted} not found` });
        if (fake.rawAnswers.run !== undefined) return sendRaw(res, fake.rawAnswers.run);
        const cut = fake.rawAnswers.runCut;
        if (cut !== undefined) {
          res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(cut)) });
          res.write(cut.slice(0, cut.length >> 1), () => res.destroy());
          return;
        }
        if (fake.runAnswerBytes) {
          res.writeHead(200, { 'content-type': 'application/json' });
          const block = Buffer.alloc(64 * 1024, 'a');
          fake.runAnswerWritten = 0;
          const write = () => {
            while (!res.destroyed && fake.runAnswerWritten < fake.runAnswerBytes) {
              fake.runAnswerWritten += block.length;
              if (!res.write(block)) return void res.once('drain', write);
            }
            res.end();
          };
          res.write('"');
          write();
          return;
        }
        const input = (body as { input_value?: string } | null)?.input_value ?? '';
        const answer = { session_id: flow.id, outputs: [{ inputs: { input_value: input }, outputs: [{ results: { message: { text: `ran ${flow.name} with ${input}` } } }] }] };
        if (fake.runDelayMs) {
          setTimeout(() => send(res, 200, answer), fake.runDelayMs).unref(); // a long delay does not keep the test process
          return;
        }
        return send(res, 200, answer);
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
