/**
 * Schema validation shared by all services: bodies are validated strictly (no type coercion, unknown keys
 * rejected where the schema says so); querystring, params and headers coerce strings to the declared types.
 */
import Ajv, { type ErrorObject } from 'ajv';
import addFormats from 'ajv-formats';
import type { FastifySchemaCompiler } from 'fastify';
import type { FastifySchemaValidationError } from 'fastify/types/schema';

function makeAjv(coerceTypes: boolean | 'array'): Ajv {
  const ajv = new Ajv({ coerceTypes, useDefaults: true, removeAdditional: false, allErrors: true, strict: false });
  addFormats(ajv);
  return ajv;
}

const bodyAjv = makeAjv(false);
const paramsAjv = makeAjv('array');

export const validatorCompiler: FastifySchemaCompiler<unknown> = ({ schema, httpPart }) =>
  (httpPart === 'body' ? bodyAjv : paramsAjv).compile(schema as object) as ReturnType<FastifySchemaCompiler<unknown>>;

/**
 * The error Fastify makes of failed schema validation (`validation` + `validationContext`, status 400), for a route's
 * own `schemaErrorFormatter` to fall back on when it gives only some errors a code of their own.
 */
export function schemaValidationError(errors: FastifySchemaValidationError[], dataVar: string): Error {
  return Object.assign(new Error(`${dataVar} is invalid`), { statusCode: 400, validation: errors, validationContext: dataVar });
}

/** The dotted path of the field an ajv error is about, e.g. `repository.url`. */
export function fieldPath(e: ErrorObject): string {
  const parts = e.instancePath.split('/').filter(Boolean).map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
  const p = e.params as { missingProperty?: string; additionalProperty?: string };
  if (e.keyword === 'required' && p.missingProperty) parts.push(p.missingProperty);
  if (e.keyword === 'additionalProperties' && p.additionalProperty) parts.push(p.additionalProperty);
  return parts.join('.');
}

export function fieldMessage(e: ErrorObject): string {
  if (e.keyword === 'required') return 'is required';
  if (e.keyword === 'additionalProperties') return 'is not a known field';
  if (e.keyword === 'false schema') return 'is not allowed here';
  if (e.keyword === 'enum') return `must be one of: ${((e.params as { allowedValues: unknown[] }).allowedValues ?? []).join(', ')}`;
  return e.message ?? 'is invalid';
}

/** Maps ajv errors to `{ "<field path>": "<message>" }`, the first message per field winning. */
export function validationDetails(errors: ErrorObject[], context?: string): Record<string, string> {
  const details: Record<string, string> = {};
  for (const e of errors) {
    const key = fieldPath(e) || context || 'body';
    if (!(key in details)) details[key] = fieldMessage(e);
  }
  return details;
}
