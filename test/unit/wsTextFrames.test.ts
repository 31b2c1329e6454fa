/**
 * Pre-built text frames (api/http/wsTextFrames.ts) on a real ws server, read by a real ws client: every length class
 * (7-bit, 16-bit and 64-bit lengths), multi-byte UTF-8, and many frames in one write arrive as separate messages, in
 * order, byte for byte.
 */
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import WebSocket, { WebSocketServer } from 'ws';
import { textFrame, writeTextFrames } from '../../api/http/wsTextFrames';

async function roundTrip(messages: string[]): Promise<string[]> {
  const server = new WebSocketServer({ port: 0, host: '127.0.0.1' });
  await once(server, 'listening');
  server.on('connection', (socket) => {
    writeTextFrames(socket, messages.map((m) => textFrame(Buffer.from(m))));
    socket.close(1000, 'done');
  });
  const client = new WebSocket(`ws://127.0.0.1:${(server.address() as AddressInfo).port}`);
  const got: string[] = [];
  client.on('message', (data, isBinary) => {
    expect(isBinary).toBe(false);
    got.push(String(data));
  });
  await once(client, 'close');
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return got;
}

describe('pre-built WebSocket text frames', () => {
  it('arrive as the same messages, in order, for every length class and in one write', async () => {
    const messages = ['', 'a', 'x'.repeat(125), 'y'.repeat(126), 'z'.repeat(65_535), 'é🚀'.repeat(30_000), 'w'.repeat(70_000), '{"seq":1}'];
    expect(await roundTrip(messages)).toEqual(messages);
  });

  it('sends 5,000 frames written as one buffer as 5,000 messages', async () => {
    const messages = Array.from({ length: 5000 }, (_, i) => JSON.stringify({ seq: i + 1, message: `line ${i + 1}` }));
    expect(await roundTrip(messages)).toEqual(messages);
  });

  it('frames a message as RFC 6455 lays it out: FIN and the text opcode, no mask, the shortest length form', () => {
    expect([...textFrame(Buffer.from('hi'))]).toEqual([0x81, 2, 0x68, 0x69]);
    const mid = textFrame(Buffer.alloc(300, 0x61));
    expect([mid[0], mid[1], mid.readUInt16BE(2), mid.length]).toEqual([0x81, 126, 300, 304]);
    const big = textFrame(Buffer.alloc(70_000, 0x61));
    expect([big[0], big[1], Number(big.readBigUInt64BE(2)), big.length]).toEqual([0x81, 127, 70_000, 70_010]);
  });
});
