/**
 * A worker's own HTTP port, open from the start of the process: GET /health (readiness: 200 while polling, 503 while
 * the start waits for something, saying what, and once draining), GET /health/live (liveness: 200 while the process
 * answers), GET /metrics (the worker's prom-client registry), POST /drain (stop polling and finish running work, then
 * exit: rolling restarts).
 */
import http from 'node:http';
import { localUrl } from '../lib/hostAddress';
import type { Metrics } from '../lib/metrics';

export interface WorkerHealthState {
  identity: string;
  queues: string[];
  draining: boolean;
  /** What the start waits for ("Temporal at host:port"), until the workers poll; undefined once they do. */
  waitingFor?: string;
}

export interface WorkerHealthServer {
  address: string;
  close(): Promise<void>;
}

export async function startWorkerHealthServer(opts: {
  host: string;
  port: number;
  metrics: Metrics;
  state: () => WorkerHealthState;
  onDrain: () => void;
}): Promise<WorkerHealthServer> {
  const server = http.createServer((req, res) => {
    const url = (req.url ?? '/').split('?')[0];
    const send = (status: number, body: unknown, type = 'application/json') => {
      res.writeHead(status, { 'content-type': type });
      res.end(typeof body === 'string' ? body : JSON.stringify(body));
    };
    if (req.method === 'GET' && url === '/health') {
      const s = opts.state();
      if (s.draining) return send(503, { status: 'draining', service: 'worker', identity: s.identity, queues: s.queues });
      if (s.waitingFor !== undefined) return send(503, { status: 'starting', service: 'worker', identity: s.identity, queues: s.queues, waiting: `waiting for ${s.waitingFor}` });
      return send(200, { status: 'ok', service: 'worker', identity: s.identity, queues: s.queues });
    }
    // liveness: the process runs and answers, whatever it waits for (a probe that restarts it would not help)
    if (req.method === 'GET' && url === '/health/live') return send(200, { status: 'alive', service: 'worker', identity: opts.state().identity });
    if (req.method === 'GET' && url === '/metrics') {
      opts.metrics.registry
        .metrics()
        .then((text) => send(200, text, opts.metrics.registry.contentType))
        .catch(() => send(500, { detail: 'metrics unavailable' }));
      return;
    }
    if (req.method === 'POST' && url === '/drain') {
      opts.onDrain();
      return send(202, { status: 'draining', identity: opts.state().identity });
    }
    send(404, { detail: 'Not Found' });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.host, () => resolve());
  });
  const addr = server.address() as { address: string; port: number };
  return {
    address: localUrl(opts.host, addr.port),
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
