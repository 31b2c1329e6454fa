/**
 * WebSocket text frames built once and written many times. A server's frames are not masked (RFC 6455 §5.1), so the
 * bytes of one message are the same on every connection: a live log line followed by 100 sockets is framed once per
 * API process, and a batch of lines leaves each socket as one buffer in one write — not one `ws.send` (header buffer,
 * write request, callback) per line per follower.
 */
import type { WebSocket } from 'ws';

/** One unfragmented text frame (FIN, opcode 1, no mask) carrying `payload` (UTF-8). */
export function textFrame(payload: Buffer): Buffer {
  const n = payload.length;
  const head = n < 126 ? 2 : n < 65536 ? 4 : 10;
  const frame = Buffer.allocUnsafe(head + n);
  frame[0] = 0x81;
  if (n < 126) frame[1] = n;
  else if (n < 65536) {
    frame[1] = 126;
    frame.writeUInt16BE(n, 2);
  } else {
    frame[1] = 127;
    frame.writeBigUInt64BE(BigInt(n), 2);
  }
  payload.copy(frame, head);
  return frame;
}

interface RawSocket {
  destroyed: boolean;
  write(b: Buffer): boolean;
}

/** The payload of a frame made by textFrame. */
function payloadOf(frame: Buffer): Buffer {
  const len = frame[1] as number;
  return frame.subarray(len < 126 ? 2 : len === 126 ? 4 : 10);
}

/**
 * Writes whole frames to an open WebSocket in one write of its TCP socket. Only for sockets that send nothing else
 * through `ws.send` meanwhile (ws queues its own messages while it compresses, so the two paths' order is not kept);
 * falls back to `ws.send` per message where the TCP socket is not reachable.
 */
export function writeTextFrames(socket: WebSocket, frames: Buffer[]): void {
  if (socket.readyState !== socket.OPEN || !frames.length) return;
  const tcp = tcpOf(socket);
  if (!tcp) {
    for (const f of frames) socket.send(payloadOf(f), { binary: false });
    return;
  }
  if (tcp.destroyed) return;
  tcp.write(frames.length === 1 ? (frames[0] as Buffer) : Buffer.concat(frames));
}

function tcpOf(socket: WebSocket): (RawSocket & { writableLength: number; once(event: 'drain' | 'close', f: () => void): void; off(event: 'drain' | 'close', f: () => void): void }) | undefined {
  const tcp = (socket as unknown as { _socket?: RawSocket })._socket;
  return tcp && typeof tcp.write === 'function' ? (tcp as ReturnType<typeof tcpOf>) : undefined;
}

/** Bytes a WebSocket may have waiting to be sent before its writer waits for them (a follower that reads slowly). */
export const WS_BACKLOG_BYTES = 1024 * 1024;

/**
 * Resolves once the socket's waiting bytes are under WS_BACKLOG_BYTES (at once when they are), or it closed, or
 * `signal` aborted: a writer that awaits this before each write holds at most the backlog and one batch for a client
 * that stops reading, not everything written meanwhile.
 */
export async function sendRoom(socket: WebSocket, signal: AbortSignal): Promise<void> {
  const tcp = tcpOf(socket);
  if (!tcp) return;
  while (!tcp.destroyed && !signal.aborted && tcp.writableLength > WS_BACKLOG_BYTES) {
    await new Promise<void>((resolve) => {
      const done = () => {
        tcp.off('drain', done);
        tcp.off('close', done);
        signal.removeEventListener('abort', done);
        resolve();
      };
      tcp.once('drain', done);
      tcp.once('close', done);
      signal.addEventListener('abort', done, { once: true });
    });
  }
}

/**
 * Bytes a push-only WebSocket (events as they happen, no loop that could wait) may have waiting before it is dropped:
 * a client that stopped reading would otherwise hold every later event in the API. It reconnects and resumes where
 * it was (`after=<seq>` of the last message it got).
 */
export const WS_DROP_BYTES = 8 * 1024 * 1024;

/** True when a push-only socket is so far behind that it is to be dropped (WS_DROP_BYTES). */
export function farBehind(socket: WebSocket): boolean {
  return socket.bufferedAmount > WS_DROP_BYTES;
}
