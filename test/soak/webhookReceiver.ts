/**
 * The chaos soak's webhook receiver: a loopback HTTP server that answers every POST 200 and keeps what came (the
 * path, the delivery id `webhook:<id>:<seq>`, the event, when, whether the signature is right for the secret).
 */
import crypto from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Received {
  path: string;
  delivery: string;
  event: string;
  at: number;
  signed: boolean;
}

export interface WebhookReceiver {
  url: string;
  received: Received[];
  close(): Promise<void>;
}

/** docs/webhooks.md, "What is signed": the raw body without its last member, HMAC-SHA256 with the secret. */
function signedRight(raw: string, header: string | undefined, secret: string): boolean {
  const m = /,"signature":"(sha256=[0-9a-f]{64})"\}$/.exec(raw);
  if (!m) return false;
  const expected = `sha256=${crypto.createHmac('sha256', secret).update(`${raw.slice(0, m.index)}}`).digest('hex')}`;
  return expected === m[1] && header === expected;
}

export async function startWebhookReceiver(secret: string): Promise<WebhookReceiver> {
  const received: Received[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      received.push({
        path: req.url ?? '',
        delivery: String(req.headers['x-armada-delivery'] ?? ''),
        event: String(req.headers['x-armada-event'] ?? ''),
        at: Date.now(),
        signed: signedRight(raw, req.headers['x-armada-signature'] as string | undefined, secret),
      });
      res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    received,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
