/**
 * The Server-Timing response header (W3C Server Timing): where a request's time went, per part, in milliseconds.
 * The attempt start endpoints send `db`, `temporal` and `total` (docs/attempts.md, "Starting an attempt").
 */
export function serverTiming(parts: Record<string, number>): string {
  return Object.entries(parts)
    .map(([name, ms]) => `${name};dur=${ms.toFixed(2)}`)
    .join(', ');
}

/** The header as OpenAPI documents it: a response schema with `headers` becomes the response's `headers` (@fastify/swagger). */
export const SERVER_TIMING_HEADER = {
  'Server-Timing': {
    type: 'string',
    pattern: '^[a-z]+;dur=[0-9]+\\.[0-9]{2}(, [a-z]+;dur=[0-9]+\\.[0-9]{2})*$',
    description: "Where the start's time went, in milliseconds: `db` (PostgreSQL), `temporal` (the workflow start), `total` (the request in the service)",
  },
} as const;

/** A response schema that also documents the Server-Timing header. */
export function withServerTiming<T extends object>(schema: T): T & { headers: typeof SERVER_TIMING_HEADER } {
  return { ...schema, headers: SERVER_TIMING_HEADER };
}
