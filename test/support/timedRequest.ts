/** One HTTP request as the fault tests look at its answer: status, time taken, Retry-After and body. */

export interface TimedAnswer {
  status: number;
  /** from sending to the whole body read */
  ms: number;
  retryAfter: string | null;
  /** the JSON body, or `{ text }` when it is not JSON */
  body: Record<string, unknown>;
}

export async function timedRequest(
  url: string,
  opts: { method: 'GET' | 'POST' | 'PATCH' | 'DELETE'; payload?: unknown; headers?: Record<string, string>; timeoutMs: number },
): Promise<TimedAnswer> {
  const headers: Record<string, string> = { ...opts.headers };
  if (opts.payload !== undefined) headers['content-type'] = 'application/json';
  const t0 = Date.now();
  const r = await fetch(url, {
    method: opts.method,
    headers,
    body: opts.payload === undefined ? undefined : JSON.stringify(opts.payload),
    signal: AbortSignal.timeout(opts.timeoutMs),
  });
  const text = await r.text();
  let body: Record<string, unknown>;
  try {
    body = JSON.parse(text) as Record<string, unknown>;
  } catch {
    body = { text };
  }
  return { status: r.status, ms: Date.now() - t0, retryAfter: r.headers.get('retry-after'), body };
}
