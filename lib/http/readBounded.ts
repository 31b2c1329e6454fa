/**
 * The body of an answer from a server Armada does not run (a flow platform, the code host, an API served as MCP
 * tools), read up to a limit: `await res.text()` buffered whatever came, so a misconfigured URL that streams a large
 * file, or a platform answering gigabytes, could take the worker's memory. Past the limit the rest is not read (the
 * connection is cancelled), `text` holds the first maxBytes (a character cut at the end becomes U+FFFD) and
 * `truncated` is set; the caller says what that means for its request.
 */
export async function readBoundedText(res: Response, maxBytes: number): Promise<{ text: string; truncated: boolean }> {
  if (!res.body) return { text: '', truncated: false };
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    if (size + value.byteLength > maxBytes) {
      await reader.cancel().catch(() => undefined);
      return { text: Buffer.concat([...chunks, value.subarray(0, maxBytes - size)]).toString('utf8'), truncated: true };
    }
    chunks.push(value);
    size += value.byteLength;
  }
  return { text: Buffer.concat(chunks).toString('utf8'), truncated: false };
}

/** A size for messages: `16 MiB`, `512 KiB`, `900 bytes`. */
export function formatBytes(n: number): string {
  if (n >= 1024 * 1024 && n % (1024 * 1024) === 0) return `${n / (1024 * 1024)} MiB`;
  if (n >= 1024 && n % 1024 === 0) return `${n / 1024} KiB`;
  return `${n} bytes`;
}
