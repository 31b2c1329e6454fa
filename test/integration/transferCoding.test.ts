/**
 * How a request body is framed, over a real socket (Node's HTTP parser), on every service's write route:
 * - a transfer coding other than chunked (`Transfer-Encoding: gzip, chunked`) is the 415 a Content-Encoding gets,
 *   with `Accept-Encoding: identity`: Node decodes only the chunking and handed the route the compressed bytes;
 * - a transfer coding list whose last coding is not chunked, and a chunk whose size line is malformed, are a 400 in
 *   the service's shape and the connection closes;
 * - a chunked body the client stops sending, like one shorter than its Content-Length, is a 408 once the request
 *   timeout passes; never a 500, never a request left hanging; and no row is written by any of them.
 */
import net from 'node:net';
import { gzipSync } from 'node:zlib';
import type { ServiceKind } from '../../api/http/openapi';
import { startTestStack, type TestStack } from '../support/harness';

const SERVICES: ServiceKind[] = ['task', 'scheduler', 'agents', 'traces'];
const REQUEST_TIMEOUT_MS = 2000;

let stack: TestStack;
const ports: Partial<Record<ServiceKind, number>> = {};

beforeAll(async () => {
  stack = await startTestStack({ services: SERVICES, env: { ARMADA_REQUEST_TIMEOUT_MS: String(REQUEST_TIMEOUT_MS) } });
  for (const service of SERVICES) ports[service] = Number(new URL(await stack.app(service).listen({ port: 0, host: '127.0.0.1' })).port);
}, 120_000);
afterAll(async () => {
  await stack?.close();
});

/** A write route of each service, a body it would accept, and the table that body would add a row to. */
const WRITES: Record<ServiceKind, { path: string; body: () => object; table: string }> = {
  task: { path: '/api/task-templates', body: () => ({ name: 'framed', tasks: [{ title: 't' }] }), table: 'task_templates' },
  scheduler: { path: '/api/v1/sources', body: () => ({ source_type: 'flow-builder', url: 'http://127.0.0.1:9/framed' }), table: 'scheduler_sources' },
  agents: { path: '/api/v1/memory', body: () => ({ content: 'framed', agent: 'nobody' }), table: 'agent_memory' },
  traces: { path: '/api/v1/traces', body: () => ({ messageId: 'framed', instance: 'i', to: '+15550102000', message: 'framed' }), table: 'traces' },
};

interface Answer {
  status: number;
  headers: Record<string, string>;
  body: unknown;
  /** whether the server said it closes the connection (`Connection: close`) */
  closed: boolean;
}

/** Sends raw bytes and reads the answer (status, headers, JSON body), or 'no answer' when none came whole within 15 s. */
function exchange(service: ServiceKind, ...parts: (string | Buffer)[]): Promise<Answer | 'no answer'> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(ports[service] as number, '127.0.0.1', () => {
      for (const p of parts) socket.write(p);
    });
    let data = Buffer.alloc(0);
    let answer: Answer | undefined;
    const parse = (): Answer | undefined => {
      const text = data.toString('latin1');
      const end = text.indexOf('\r\n\r\n');
      if (end < 0) return undefined;
      const lines = text.slice(0, end).split('\r\n');
      const headers: Record<string, string> = {};
      for (const line of lines.slice(1)) headers[line.slice(0, line.indexOf(':')).toLowerCase()] = line.slice(line.indexOf(':') + 1).trim();
      const body = data.subarray(Buffer.byteLength(text.slice(0, end + 4), 'latin1'));
      if (body.length < Number(headers['content-length'] ?? 0)) return undefined;
      return { status: Number(lines[0]?.split(' ')[1]), headers, body: JSON.parse(body.toString('utf8') || 'null'), closed: headers.connection === 'close' };
    };
    const timer = setTimeout(() => {
      socket.destroy();
      resolve(answer ?? 'no answer');
    }, 15_000);
    socket.on('data', (c) => {
      data = Buffer.concat([data, c]);
      answer ??= parse();
      if (!answer) return;
      clearTimeout(timer);
      socket.destroy();
      resolve(answer);
    });
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(answer ?? 'no answer');
    });
    socket.on('error', reject);
  });
}

/** The request head, with the service's key. */
const head = (service: ServiceKind, headers: string[]) =>
  [`POST ${WRITES[service].path} HTTP/1.1`, 'Host: localhost', ...(service === 'task' ? [] : [`X-API-Key: ${stack.keys[service]}`]), 'Content-Type: application/json', ...headers, '', ''].join('\r\n');

/** `data` as one chunk and the last chunk. */
const chunked = (data: Buffer) => Buffer.concat([Buffer.from(`${data.length.toString(16)}\r\n`), data, Buffer.from('\r\n0\r\n\r\n')]);

const shaped = (service: ServiceKind, message: RegExp, code = 'VALIDATION_ERROR') =>
  service === 'task' ? expect.objectContaining({ success: false, error: expect.objectContaining({ code, message: expect.stringMatching(message) }) }) : { detail: expect.stringMatching(message) };

async function rows(service: ServiceKind): Promise<number> {
  const r = await stack.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${WRITES[service].table}`);
  return r.rows[0]?.n ?? 0;
}

describe.each(SERVICES)('%s service', (service) => {
  test('a transfer coding other than chunked is the 415 of a compressed body, with Accept-Encoding: identity', async () => {
    const before = await rows(service);
    const json = Buffer.from(JSON.stringify(WRITES[service].body()));
    for (const [coding, body] of [
      ['gzip, chunked', gzipSync(json)],
      ['GZip,chunked', gzipSync(json)],
      // a coding the body does not have is refused too, rather than read as if it were absent
      ['deflate, chunked', json],
      ['gzip, identity, chunked', gzipSync(json)],
    ] as const) {
      const answer = await exchange(service, head(service, [`Transfer-Encoding: ${coding}`]), chunked(body));
      expect({ coding, answer }).toEqual({
        coding,
        answer: {
          status: 415,
          headers: expect.objectContaining({ 'accept-encoding': 'identity' }),
          body: shaped(service, /^Transfer-Encoding [a-z, ]+ is not supported: send the request body uncompressed \(Transfer-Encoding: chunked or a Content-Length\)$/),
          closed: expect.any(Boolean),
        },
      });
      expect(JSON.stringify((answer as Answer).body)).not.toMatch(/\bat .*\.(ts|js):\d+/);
    }
    expect(await rows(service)).toBe(before);
    // chunked alone (and in any case) is read as before
    const plain = await exchange(service, head(service, ['Transfer-Encoding: Chunked']), chunked(json));
    expect((plain as Answer).status).toBeLessThan(500);
    expect((plain as Answer).status).not.toBe(415);
  }, 60_000);

  test('a transfer coding list not ending in chunked, or a malformed chunk, is a 400 in the service\'s shape and the connection closes', async () => {
    const before = await rows(service);
    const json = Buffer.from(JSON.stringify(WRITES[service].body()));
    for (const [what, request] of [
      ['gzip last', [head(service, ['Transfer-Encoding: chunked, gzip']), chunked(gzipSync(json))]],
      ['a chunk size that is no hex number', [head(service, ['Transfer-Encoding: chunked']), 'zz\r\n{}\r\n0\r\n\r\n']],
      ['a chunk longer than its size', [head(service, ['Transfer-Encoding: chunked']), `2\r\n${json}\r\n0\r\n\r\n`]],
    ] as const) {
      const answer = await exchange(service, ...request);
      expect({ what, answer }).toEqual({ what, answer: { status: 400, headers: expect.any(Object), body: shaped(service, /^Malformed HTTP request \(HPE_[A-Z_]+\); send HTTP\/1\.1 with well-formed headers$/), closed: true } });
    }
    expect(await rows(service)).toBe(before);
  }, 60_000);

  test('a chunked body the client stops sending is a 408 once the request timeout passes, as a body short of its Content-Length is', async () => {
    const before = await rows(service);
    const started = Date.now();
    const stopped = await exchange(service, head(service, ['Transfer-Encoding: chunked']), '40\r\n{"a":');
    expect(stopped).toEqual({ status: 408, headers: expect.any(Object), body: shaped(service, /^The request was not received in time; send it again$/, 'REQUEST_TIMEOUT'), closed: true });
    const short = await exchange(service, head(service, ['Content-Length: 100']), '{"a":1');
    expect(short).toEqual({ status: 408, headers: expect.any(Object), body: shaped(service, /^The request was not received in time; send it again$/, 'REQUEST_TIMEOUT'), closed: true });
    expect(Date.now() - started).toBeLessThan(4 * 2 * REQUEST_TIMEOUT_MS);
    expect(await rows(service)).toBe(before);
  }, 60_000);
});
