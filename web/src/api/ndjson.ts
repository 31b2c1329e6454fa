/**
 * Reads an NDJSON answer of the task service (`GET /api/processes/:id/logs` and the like) as it arrives: `onLines`
 * gets the lines of each chunk, parsed. One HTTP answer carries a whole log at the speed of the network; the same
 * 100k lines as WebSocket messages cost the browser one message dispatch each (12 s against about 1 s for the answer).
 */
import { getApiKey, reportUnauthorized } from './auth';
import { buildUrl, errorFromBody } from './client';

export async function readNdjson<T>(path: string, onLines: (lines: T[]) => void, signal: AbortSignal): Promise<void> {
  const headers: Record<string, string> = { accept: 'application/x-ndjson' };
  const key = getApiKey();
  if (key) headers.authorization = `Bearer ${key}`;
  const res = await fetch(buildUrl('task', path), { headers, signal });
  if (!res.ok || !res.body) {
    if (res.status === 401) reportUnauthorized();
    let body: unknown = null;
    try {
      body = await res.json();
    } catch {
      // not JSON: the status says it
    }
    throw errorFromBody(res.status, body);
  }
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  let rest = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    const text = rest + value;
    const end = text.lastIndexOf('\n');
    if (end < 0) {
      rest = text;
      continue;
    }
    rest = text.slice(end + 1);
    onLines(
      text
        .slice(0, end)
        .split('\n')
        .filter((l) => l.trim() !== '')
        .map((l) => JSON.parse(l) as T),
    );
  }
  if (rest.trim()) onLines([JSON.parse(rest) as T]);
}
