/**
 * A stream's output as lines, split as node:readline splits them (`\n`, `\r\n` — also across chunks — and a lone `\r`
 * end a line; a last line without an end still counts), without readline's per-line machinery: an agent printing
 * 200 lines a second made readline ~8 µs a line of the worker's CPU, more than the rest of the line's way to the
 * database (docs/benchmarks.md, "Live logs", session 22). Resolves once the stream ended (or closed or failed).
 */
import { StringDecoder } from 'node:string_decoder';

export function readLines(input: NodeJS.ReadableStream, onLine: (line: string) => void): Promise<void> {
  const decoder = new StringDecoder('utf8');
  let carry = '';
  /** the last text seen ended with a `\r` (its line was emitted): a `\n` right after it is part of that end */
  let afterCR = false;
  const feed = (text: string) => {
    if (!text) return;
    let from = 0;
    if (afterCR && text.charCodeAt(0) === 10) from = 1;
    afterCR = false;
    if (text.indexOf('\r', from) === -1) {
      // the common case: only \n
      for (;;) {
        const nl = text.indexOf('\n', from);
        if (nl === -1) break;
        onLine(carry ? carry + text.slice(from, nl) : text.slice(from, nl));
        carry = '';
        from = nl + 1;
      }
      if (from < text.length) carry += text.slice(from);
      return;
    }
    const ends = /\r\n|\n|\r/g;
    ends.lastIndex = from;
    for (let m = ends.exec(text); m; m = ends.exec(text)) {
      onLine(carry ? carry + text.slice(from, m.index) : text.slice(from, m.index));
      carry = '';
      from = m.index + m[0].length;
    }
    if (from < text.length) carry += text.slice(from);
    else if (text.charCodeAt(text.length - 1) === 13) afterCR = true;
  };
  return new Promise<void>((resolve) => {
    let done = false;
    const finish = () => {
      if (done) return;
      done = true;
      feed(decoder.end());
      if (carry) onLine(carry);
      carry = '';
      resolve();
    };
    input.on('data', (chunk: string | Buffer) => feed(typeof chunk === 'string' ? chunk : decoder.write(chunk)));
    input.once('end', finish);
    input.once('close', finish);
    input.once('error', finish);
  });
}
