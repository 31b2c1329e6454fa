/**
 * A recording fake flow platform for the scheduler benchmark: a loopback HTTP server that answers a flow-builder
 * source's calls (health, version, flow list: one flow `bench-flow`) and records the wall-clock time each run request
 * (`POST /api/v1/run/<flow>`) arrived, with the input it carried. It answers at once, so what the benchmark measures
 * ends at the platform's door.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';

export interface RunReceipt {
  /** epoch milliseconds (sub-millisecond precision) when the request's headers arrived */
  at: number;
  flow: string;
  input: string;
}

export interface RecordingPlatform {
  url: string;
  receipts: RunReceipt[];
  close(): Promise<void>;
}

export const BENCH_FLOW = 'bench-flow';

const now = (): number => performance.timeOrigin + performance.now();

export async function startRecordingPlatform(): Promise<RecordingPlatform> {
  const receipts: RunReceipt[] = [];
  const server = http.createServer((req, res) => {
    const at = now();
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const path = (req.url ?? '/').split('?')[0] ?? '/';
      const send = (body: unknown) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify(body));
      };
      const run = /^\/api\/v1\/run\/([^/]+)$/.exec(path);
      if (req.method === 'POST' && run) {
        let input = '';
        try {
          input = String((JSON.parse(Buffer.concat(chunks).toString('utf8')) as { input_value?: unknown }).input_value ?? '');
        } catch {
          input = '';
        }
        receipts.push({ at, flow: decodeURIComponent(run[1] as string), input });
        return send({ outputs: [{ flow: run[1], result: 'ok' }] });
      }
      if (path === '/health') return send({ status: 'ok' });
      if (path === '/api/v1/version') return send({ version: '1.0.0', package: 'recording-platform' });
      if (path.startsWith('/api/v1/flows')) return send([{ id: BENCH_FLOW, name: BENCH_FLOW, endpoint_name: BENCH_FLOW, description: 'records its runs' }]);
      send({});
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    receipts,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
