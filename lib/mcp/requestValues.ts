/**
 * The values of a tool call's arguments as parts of an HTTP request, refused (an Error saying why, which the model
 * gets as a tool error) when they would send the request somewhere else or cannot be sent at all.
 */
import type { JsonSchema } from './openapiToTools';

/** An argument as text: strings as they are, numbers and booleans written out, anything else as JSON. */
export function stringValue(v: unknown): string {
  return typeof v === 'string' ? v : typeof v === 'number' || typeof v === 'boolean' ? String(v) : JSON.stringify(v);
}

function typesOf(schema: JsonSchema | undefined): string[] {
  const t = (schema as { type?: unknown } | undefined)?.type;
  return Array.isArray(t) ? t.filter((x): x is string => typeof x === 'string') : typeof t === 'string' ? [t] : [];
}

function described(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'a list';
  if (typeof v === 'object') return 'an object';
  if (typeof v === 'number') return String(v); // NaN, Infinity
  return `a ${typeof v}`;
}

/**
 * `s` unchanged when it is well-formed UTF-16; refused when it holds an unpaired surrogate (a JSON `"\ud800"` escape
 * without its pair), which no URL can carry: `encodeURIComponent` threw its bare "URI malformed" (the model's only
 * answer, naming no argument), and a query value was sent with U+FFFD in its place, another value than given.
 */
function wellFormed(what: string, s: string): string {
  if ((s as string & { isWellFormed(): boolean }).isWellFormed()) return s;
  throw new Error(`${what} must be well-formed Unicode: it holds an unpaired UTF-16 surrogate (U+D800–U+DFFF), which a URL cannot carry; send each astral character as a pair`);
}

/** A query parameter's value (stringValue), refused when a URL cannot carry it (an unpaired surrogate). */
export function queryValue(name: string, v: unknown): string {
  return wellFormed(`query parameter ${name}`, stringValue(v));
}

/** A form-encoded body field's value, refused when a URL encoding cannot carry it (an unpaired surrogate). */
export function formValue(name: string, v: unknown): string {
  return wellFormed(`body field ${name}`, stringValue(v));
}

/** A cookie parameter's value, percent-encoded; refused when a URL cannot carry it (an unpaired surrogate). */
export function cookieValue(name: string, v: unknown): string {
  return encodeURIComponent(wellFormed(`cookie parameter ${name}`, stringValue(v)));
}

/**
 * A path parameter's value, percent-encoded for its place in the path. Refused: a value that is not a string or a
 * finite number (a boolean too when the schema's type is boolean): `null` was sent as `/items/null`; and an empty
 * value: `/items/` is the collection, not an item.
 */
export function pathSegment(name: string, v: unknown, schema: JsonSchema | undefined): string {
  const ok = typeof v === 'string' || (typeof v === 'number' && Number.isFinite(v)) || (typeof v === 'boolean' && typesOf(schema).includes('boolean'));
  if (!ok) throw new Error(`path parameter ${name} must be a string or a number, not ${described(v)}`);
  const s = stringValue(v);
  if (s === '') throw new Error(`path parameter ${name} must not be empty`);
  return encodeURIComponent(wellFormed(`path parameter ${name}`, s));
}

/**
 * The path of `template` once its parameters are put in, refused when it has a `.` or `..` segment: a URL drops them
 * (percent-encoded too), so `/base/items/..` called `/base/`. The parameter is named when it is the whole segment.
 */
export function checkedPath(path: string, template: string): string {
  const segments = path.split('/');
  const templateSegments = template.split('/');
  segments.forEach((segment, i) => {
    const plain = segment.toLowerCase().replaceAll('%2e', '.');
    if (plain !== '.' && plain !== '..') return;
    const whole = /^\{([^{}]+)\}$/.exec(templateSegments[i] ?? '');
    const why = `a URL drops "." and ".." path segments, so the call would go to another resource`;
    if (whole) throw new Error(`path parameter ${whole[1]} must not be "${plain}": ${why}`);
    throw new Error(`the path ${path} has a "${plain}" segment: ${why}; give other path parameters`);
  });
  return path;
}

/**
 * Why HTTP cannot carry `s` as a header value, or undefined when it can: a line break or NUL, another control
 * character (U+0001–U+001F but tab, and U+007F: fetch refuses them too, and its refusal read as a service that is
 * down), a character past U+00FF.
 */
export function headerValueProblem(s: string): string | undefined {
  for (const ch of s) {
    const code = ch.codePointAt(0) ?? 0;
    if (code === 0x0d || code === 0x0a || code === 0x00) return 'it holds a line break or NUL (CR, LF, NUL); give it without them';
    if ((code < 0x20 && code !== 0x09) || code === 0x7f) return `it holds the control character U+${code.toString(16).toUpperCase().padStart(4, '0')}; give it without it`;
    if (code > 0xff) return `it holds "${ch}", a character an HTTP header cannot carry (past U+00FF)`;
  }
  return undefined;
}

/** A header parameter's value; refused when HTTP cannot carry it (headerValueProblem). */
export function headerValue(name: string, v: unknown): string {
  const s = stringValue(v);
  const problem = headerValueProblem(s);
  if (problem) throw new Error(`the value of header parameter ${name} is not allowed in an HTTP header: ${problem}`);
  return s;
}

/**
 * The arguments of a call that its tool does not take, refused: a misspelt optional argument (`descripton`) was
 * dropped without a word and the call went out without it, as if it had been left out. Each service refuses a field
 * or query parameter it does not know for the same reason (docs/security.md); the message names the ones it takes.
 */
export function unknownArgumentsError(toolName: string, args: Record<string, unknown>, known: readonly string[]): string | undefined {
  const unknown = Object.keys(args).filter((k) => !known.includes(k));
  if (unknown.length === 0) return undefined;
  const takes = known.length ? `it takes ${known.join(', ')}` : 'it takes none';
  return `${toolName} has no argument${unknown.length > 1 ? 's' : ''} ${unknown.map((k) => JSON.stringify(k)).join(', ')}: ${takes}; nothing was sent`;
}

/**
 * The dotted path of the first number in an argument's value that is not finite, or undefined. JSON has no such
 * numbers, but the message's parser reads `1e400` as Infinity, which a JSON body carries as `null`: a field the
 * model meant to set huge was sent as null (which clears a nullable one). Refused instead, as the services refuse
 * such a number sent to them directly.
 */
export function nonFiniteNumberPath(value: unknown, path = ''): string | undefined {
  const stack: { v: unknown; path: string }[] = [{ v: value, path }];
  while (stack.length) {
    const { v, path: at } = stack.pop() as { v: unknown; path: string };
    if (typeof v === 'number' && !Number.isFinite(v)) return at;
    if (v === null || typeof v !== 'object') continue;
    for (const [k, child] of Object.entries(v)) stack.push({ v: child, path: at ? `${at}.${k}` : k });
  }
  return undefined;
}
