/** One raw HTTP exchange on a loopback connection that closes after it (tests that send bytes no client would). */
import net from 'node:net';

export interface RawAnswer {
  /** the status line as sent */
  line: string;
  status: number;
  /** header names lower-cased */
  headers: Record<string, string>;
  body: string;
  /** the body parsed, when it is JSON */
  json: unknown;
}

/** Sends `request` as it is to `port` and reads the answer until the server closes the connection. */
export function rawExchange(port: number, request: string | Buffer): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () => socket.write(request));
    const chunks: Buffer[] = [];
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('error', reject);
    socket.on('close', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const end = text.indexOf('\r\n\r\n');
      const [line = '', ...lines] = text.slice(0, end).split('\r\n');
      const headers = Object.fromEntries(lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]));
      const body = text.slice(end + 4);
      let json: unknown;
      try {
        json = JSON.parse(body);
      } catch {
        json = undefined;
      }
      resolve({ line, status: Number(line.split(' ')[1]), headers, body, json });
    });
  });
}
