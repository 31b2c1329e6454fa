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

/** Why a socket dropped for being far behind is closed (RFC 6455 1008, policy violation; a reason ≤ 123 bytes). */
export const FAR_BEHIND_REASON = 'too far behind: 8 MiB unread; reconnect (the event stream resumes with after=<cursor>)';
/** Why a socket that floods pings is closed: its pongs wait unread (PENDING_PONGS_MAX). */
export const PING_FLOOD_REASON = 'too many pings: 60 pongs wait unread; read the pongs, or ping less often';

/** How long a dropped socket's close frame may wait behind the bytes it has not read before the connection is cut. */
export const DROP_GRACE_MS = 5000;

/**
 * Drops a socket that is far behind: no more is written to it, and it is sent 1008 with `reason`, behind what waits
 * for it; a client that reads again within DROP_GRACE_MS reads that close (it was cut with 1006 and no word before,
 * session 50), one that does not is cut then, so it holds what waits for it no longer than that.
 */
export function dropFarBehind(socket: WebSocket, reason: string = FAR_BEHIND_REASON): void {
  if (socket.readyState !== socket.OPEN) return;
  socket.close(1008, reason);
  const cut = setTimeout(() => socket.terminate(), DROP_GRACE_MS);
  cut.unref();
  socket.once('close', () => clearTimeout(cut));
}

/** Pongs that may wait unwritten for a client before it is dropped: ws's own bound (its `maxPendingAutoPongs`). */
export const PENDING_PONGS_MAX = 60;

/**
 * Answers a socket's pings (the server is made with `autoPong: false`): a pong each, as ws did, until
 * PENDING_PONGS_MAX of them wait for a client that reads none; then it is dropped with 1008 and PING_FLOOD_REASON.
 * ws's own guard did the same by `terminate()`, so the client saw 1006 and no reason.
 */
export function answerPings(socket: WebSocket): void {
  let pending = 0;
  socket.on('ping', (data: Buffer) => {
    if (socket.readyState !== socket.OPEN) return;
    if (pending >= PENDING_PONGS_MAX) return dropFarBehind(socket, PING_FLOOD_REASON);
    pending++;
    socket.pong(data, false, () => pending--);
  });
}
