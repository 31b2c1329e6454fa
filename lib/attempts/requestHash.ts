/** The fingerprint of a request body an Idempotency-Key is bound to (attempt_idempotency_keys.request_hash). */
import { createHash } from 'node:crypto';

/** The value with every object's keys in sorted order, so two bodies that differ only in key order are one. */
function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical);
  if (value !== null && typeof value === 'object') {
    const o = value as Record<string, unknown>;
    return Object.fromEntries(
      Object.keys(o)
        .sort()
        .map((k) => [k, canonical(o[k])]),
    );
  }
  return value;
}

/**
 * sha256 (hex) of a request body (as validated: no body is `{}`) written as canonical JSON: the key order and the
 * white space of what was sent do not count, any value does.
 */
export function requestHash(body: unknown): string {
  return createHash('sha256')
    .update(JSON.stringify(canonical(body ?? {})))
    .digest('hex');
}
