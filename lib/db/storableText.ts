/**
 * Text PostgreSQL can store, for text that comes from outside processes and cannot be refused: agents' and scripts'
 * output, flow platforms' answers, git. PostgreSQL's `text` and `jsonb` refuse NUL (U+0000, errors 22021 and
 * 22P05), and `jsonb` refuses an unpaired UTF-16 surrogate (`text` stores U+FFFD in its place). Before this, one NUL
 * printed by an agent failed the insert of its whole log batch: every line of that run was lost. Each becomes U+FFFD,
 * as the UTF-8 decoder already does with bytes that are not UTF-8. Requests never get here with either: the input
 * policy refuses them with a 400 (api/http/inputPolicy.ts).
 */

const REPLACEMENT = '\ufffd';

type WellFormed = string & { isWellFormed(): boolean; toWellFormed(): string };

/** `s` with NUL and unpaired surrogates as U+FFFD; `s` itself (no copy) when it has neither, the common case. */
export function storableText(s: string): string {
  if (!s.includes('\u0000') && (s as WellFormed).isWellFormed()) return s;
  return (s.replaceAll('\u0000', REPLACEMENT) as WellFormed).toWellFormed();
}

/** JSON.stringify's escapes of NUL and of a lone surrogate (it writes a valid pair as the character itself). */
const SUSPECT_ESCAPE = /\\u(?:0000|d[89a-f])/i;

/** A JSON text of `value` for a json/jsonb parameter, its strings and object keys made storable (storableText). */
export function jsonParam(value: unknown): string {
  const json = JSON.stringify(value);
  // a literal backslash before "u0000" in a string also matches: the slow path below is right for it too
  if (json === undefined || !SUSPECT_ESCAPE.test(json)) return json;
  return JSON.stringify(value, (_key, v: unknown) => {
    if (typeof v === 'string') return storableText(v);
    if (v === null || typeof v !== 'object' || Array.isArray(v)) return v;
    const keys = Object.keys(v);
    if (keys.every((k) => storableText(k) === k)) return v;
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [storableText(k), x]));
  });
}

/**
 * A query parameter as node-postgres will send it, made storable: strings and arrays of them (text[]) through
 * storableText, objects through jsonParam (as node-postgres would JSON.stringify them). A string or array that needs no
 * change is returned itself (no copy). Strings that already hold JSON text are left to their writer (jsonParam).
 */
export function storableParam(value: unknown): unknown {
  if (typeof value === 'string') return storableText(value);
  if (Array.isArray(value)) {
    let out: unknown[] | undefined;
    for (let i = 0; i < value.length; i++) {
      const v = storableParam(value[i]);
      if (v === value[i]) continue;
      out ??= value.slice();
      out[i] = v;
    }
    return out ?? value;
  }
  if (value === null || typeof value !== 'object' || value instanceof Date || Buffer.isBuffer(value) || ArrayBuffer.isView(value)) return value;
  if (typeof (value as { toPostgres?: unknown }).toPostgres === 'function') return value;
  return jsonParam(value);
}

/** The parameters of one query, made storable; the same array when no parameter changes. */
export function storableParams(values: unknown[]): unknown[] {
  return storableParam(values) as unknown[];
}
