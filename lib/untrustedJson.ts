/**
 * Reading JSON that comes from outside (an agent's events, a code host's answers, an OpenAPI document, a flow
 * platform's answers) without trusting its types: one definition of "a plain object" for all of them, and a parse
 * that bounds the depth of what it returns.
 */

/** `v` when it is a plain JSON object (not null, not a list), else undefined. */
export function plainObject(v: unknown): Record<string, unknown> | undefined {
  return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
}

/** `v` when it is a plain JSON object, else an empty one: fields of anything else read as missing. */
export function recordOf(v: unknown): Record<string, unknown> {
  return plainObject(v) ?? {};
}

/** Whether a JSON text nests arrays and objects more than `maxDepth` levels, read without recursion (exact for valid JSON). */
function nestsDeeperThan(text: string, maxDepth: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++; // a backslash: the next character is escaped
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > maxDepth) return true;
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return false;
}

/**
 * Removes, in place, what a request body would lose too (api/http/baseApp.ts): `__proto__` keys and `constructor`
 * keys holding an object with `prototype`, so code merging the value later cannot be steered by them. Recursive:
 * only for values whose depth is bounded (parseUntrustedJson).
 */
function dropPrototypeKeys(v: unknown): void {
  if (v === null || typeof v !== 'object') return;
  if (Array.isArray(v)) {
    for (const x of v) dropPrototypeKeys(x);
    return;
  }
  const o = v as Record<string, unknown>;
  if (Object.hasOwn(o, '__proto__')) Reflect.deleteProperty(o, '__proto__');
  const ctor = Object.getOwnPropertyDescriptor(o, 'constructor')?.value;
  if (ctor !== null && typeof ctor === 'object' && Object.hasOwn(ctor, 'prototype')) Reflect.deleteProperty(o, 'constructor');
  for (const x of Object.values(o)) dropPrototypeKeys(x);
}

/**
 * The value of a JSON text from outside, with a bounded depth: 'not-json' when the text is no JSON, 'too-deep' when
 * it nests arrays and objects more than `maxDepth` levels (code that walks a value recursively, JSON.stringify and
 * the serialisers, runs out of stack a few thousand levels down). Its `__proto__` and `constructor.prototype` keys
 * are removed, as from a request body.
 */
export function parseUntrustedJson(text: string, maxDepth: number): { value: unknown } | { error: 'not-json' | 'too-deep' } {
  let value: unknown;
  try {
    value = JSON.parse(text); // V8's parser does not recurse: a deep text parses, it is what is done with it that fails
  } catch {
    return { error: 'not-json' };
  }
  if (nestsDeeperThan(text, maxDepth)) return { error: 'too-deep' };
  dropPrototypeKeys(value);
  return { value };
}
