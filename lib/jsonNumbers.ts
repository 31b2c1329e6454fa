/**
 * Numbers in a JSON body that a double cannot hold at the small end: `1e-400` (or `0.` and 400 zeros and a 1) is no
 * zero, but JSON.parse reads it as 0 (`-1e-400` as -0), so it passed `minimum: 0` and was stored as 0, a value the
 * client never sent. Such a number is a 400 naming it, as one beyond ±1.8e308 is (api/http/inputPolicy.ts). The
 * parsed value cannot show it, so the body's text is scanned, and only when it could hold one (a digit, `e-` and a
 * digit, or a run of 300 zeros: a nonzero number written without an exponent needs over 320 zeros to underflow).
 */

const MAY_UNDERFLOW = /\d[eE]-\d|0{300}/;

/** The tokens of a JSON text that parsed (so no other text occurs between them). */
const TOKEN = /"(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?|[{}[\],:]|true|false|null|\s+/gy;

type Frame = { kind: 'array'; index: number } | { kind: 'object'; key: string; expectKey: boolean };

/**
 * The dotted path of the first number in `text` (a JSON text JSON.parse accepted) that is not zero as written but
 * parses to ±0; '' when the text is that number; undefined when there is none.
 */
export function underflowingNumberPath(text: string): string | undefined {
  if (!MAY_UNDERFLOW.test(text)) return undefined;
  const frames: Frame[] = [];
  TOKEN.lastIndex = 0;
  for (let m = TOKEN.exec(text); m !== null && m[0] !== ''; m = TOKEN.exec(text)) {
    const token = m[0];
    const top = frames[frames.length - 1];
    const c = token.charCodeAt(0);
    if (token === '{') frames.push({ kind: 'object', key: '', expectKey: true });
    else if (token === '[') frames.push({ kind: 'array', index: 0 });
    else if (token === '}' || token === ']') frames.pop();
    else if (token === ',') {
      if (top?.kind === 'array') top.index++;
      else if (top) top.expectKey = true;
    } else if (token === ':') {
      if (top?.kind === 'object') top.expectKey = false;
    } else if (c === 0x22) {
      if (top?.kind === 'object' && top.expectKey) top.key = JSON.parse(token) as string;
    } else if ((c === 0x2d || (c >= 0x30 && c <= 0x39)) && Number(token) === 0 && /[1-9]/.test(token.split(/[eE]/)[0] as string)) {
      return frames.map((f) => (f.kind === 'array' ? String(f.index) : f.key)).join('.');
    }
  }
  return undefined;
}

/** What the 400 says of such a number. */
export const UNDERFLOW_MESSAGE = 'must be 0 or a number a double can hold (at least about ±4.9e-324): a smaller one would be read as 0';
