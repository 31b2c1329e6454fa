/**
 * A stream's output as lines, split as node:readline splits them (`\n`, `\r\n` — also across chunks — and a lone `\r`
 * end a line; a last line without an end still counts), without readline's per-line machinery: an agent printing
 * 200 lines a second made readline ~8 µs a line of the worker's CPU, more than the rest of the line's way to the
 * database (docs/benchmarks.md, "Live logs", session 22). Resolves once the stream ended (or closed or failed).
 */
import { StringDecoder } from 'node:string_decoder';

/**
 * The longest line, in UTF-16 units (1 Mi): a longer one is given as several lines of this length and a last, shorter
 * one. Without a bound, a process printing without a newline (a minified bundle, `cat` of a binary file) grew one
 * string until V8 refused it ("Invalid string length", ~512 Mi units), an exception that stopped the whole worker.
 * 1 Mi keeps whole the JSON event lines of the agents' stream formats (a tool result of a few hundred KiB).
 */
export const MAX_LINE_LENGTH = 1024 * 1024;

/** Where to cut `s` at most `max` units in: one unit earlier when that would split a surrogate pair. */
function cutAt(s: string, max: number): number {
  const code = s.charCodeAt(max - 1);
  return max > 1 && code >= 0xd800 && code <= 0xdbff ? max - 1 : max;
}

export function readLines(input: NodeJS.ReadableStream, onLine: (line: string) => void, maxLineLength = MAX_LINE_LENGTH): Promise<void> {
  const decoder = new StringDecoder('utf8');
  let carry = '';
  /** the line `carry + text`, given in pieces of at most maxLineLength */
  const emit = (line: string) => {
    while (line.length > maxLineLength) {
      const cut = cutAt(line, maxLineLength);
      onLine(line.slice(0, cut));
      line = line.slice(cut);
    }
    onLine(line);
  };
  /** text of a line not ended yet: pieces of maxLineLength go at once, so `carry` never holds more */
  const keep = (text: string) => {
    carry += text;
    while (carry.length > maxLineLength) {
      const cut = cutAt(carry, maxLineLength);
      onLine(carry.slice(0, cut));
      carry = carry.slice(cut);
    }
  };
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
        emit(carry ? carry + text.slice(from, nl) : text.slice(from, nl));
        carry = '';
        from = nl + 1;
      }
      if (from < text.length) keep(text.slice(from));
      return;
    }
    const ends = /\r\n|\n|\r/g;
    ends.lastIndex = from;
    for (let m = ends.exec(text); m; m = ends.exec(text)) {
      emit(carry ? carry + text.slice(from, m.index) : text.slice(from, m.index));
      carry = '';
      from = m.index + m[0].length;
    }
    if (from < text.length) keep(text.slice(from));
    else if (text.charCodeAt(text.length - 1) === 13) afterCR = true;
  };
  return new Promise<void>((resolve) => {
    let done = false;
    const finish = () => {
      if (done) return;
      done = true;
      feed(decoder.end());
      if (carry) emit(carry);
      carry = '';
      resolve();
    };
    input.on('data', (chunk: string | Buffer) => feed(typeof chunk === 'string' ? chunk : decoder.write(chunk)));
    input.once('end', finish);
    input.once('close', finish);
    input.once('error', finish);
  });
}
