/** React hooks around streams.ts: the stream lives while the component is mounted and `path` stays the same. */
import { useEffect, useRef } from 'react';
import { openSseStream, openWebSocketStream, type SseStreamOptions, type WebSocketStreamOptions } from './streams';

/** A WebSocket stream; `path` null = closed. The callbacks may change between renders without reconnecting. */
export function useWebSocketStream<M>(path: string | null, opts: Omit<WebSocketStreamOptions<M>, 'path'>): void {
  const ref = useRef(opts);
  ref.current = opts;
  const raw = opts.raw === true;
  const endOnNormalClose = opts.endOnNormalClose === true;
  const dedupe = opts.dedupe;
  const resetFrom = opts.resetFrom;
  const initialSeq = opts.initialSeq;
  useEffect(() => {
    if (!path) return;
    const h = openWebSocketStream<M>({
      path,
      raw,
      endOnNormalClose,
      dedupe,
      resetFrom,
      initialSeq,
      onOpen: (send) => ref.current.onOpen?.(send),
      onMessage: (m) => ref.current.onMessage(m),
      seqOf: (m) => ref.current.seqOf?.(m),
      cursorOf: (m) => ref.current.cursorOf?.(m),
      resumeQuery: (seq, token) => ref.current.resumeQuery?.(seq, token) ?? {},
      onReconnect: () => ref.current.onReconnect?.(),
      onReset: () => ref.current.onReset?.(),
      onEnd: () => ref.current.onEnd?.(),
      onLost: () => ref.current.onLost?.(),
    });
    return () => h.close();
  }, [path, raw, endOnNormalClose, dedupe, resetFrom, initialSeq]);
}

/** An SSE stream; `path` null = closed. */
export function useSseStream(path: string | null, opts: Omit<SseStreamOptions, 'path'>): void {
  const ref = useRef(opts);
  ref.current = opts;
  const ends = (opts.endEvents ?? ['end']).join(',');
  useEffect(() => {
    if (!path) return;
    const h = openSseStream({ path, endEvents: ends.split(','), onEvent: (e, d, id) => ref.current.onEvent(e, d, id) });
    return () => h.close();
  }, [path, ends]);
}
