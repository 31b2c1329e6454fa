/**
 * Reading JSON that comes from outside (an agent's events, a code host's answers, an OpenAPI document, a flow
 * platform's answers) without trusting its types: one definition of "a plain object" for all of them.
 */

/** `v` when it is a plain JSON object (not null, not a list), else undefined. */
export function plainObject(v: unknown): Record<string, unknown> | undefined {
  return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
}

/** `v` when it is a plain JSON object, else an empty one: fields of anything else read as missing. */
export function recordOf(v: unknown): Record<string, unknown> {
  return plainObject(v) ?? {};
}
