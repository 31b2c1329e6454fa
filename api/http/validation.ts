/**
 * Schema validation shared by all services: bodies are validated strictly (no type coercion, unknown keys
 * rejected where the schema says so); querystring, params and headers coerce strings to the declared types.
 */
import Ajv, { type ErrorObject } from 'ajv';
import addFormats from 'ajv-formats';
import { fullFormats } from 'ajv-formats/dist/formats';
import type { FastifySchemaCompiler } from 'fastify';
import type { FastifySchemaValidationError } from 'fastify/types/schema';
import { lowerCaseUuids } from '../../lib/ids';

const RFC3339_DATE_TIME = fullFormats['date-time'] as { validate: (s: string) => boolean };

const TIME = '[Tt ]\\d{2}:\\d{2}:[0-5]\\d(\\.\\d+)?';
const OFFSET = '([Zz]|[+-]\\d{2}:\\d{2})';
/**
 * The `date-time` values a stored time can hold, as a pattern (ECMA-262, Python and Rust alike: no lookaround) that
 * the OpenAPI documents give every request `date-time` (nulFreeStrings) and that validation applies (isStorableDateTime),
 * so the two say the same: seconds 00–59, no leap second (`23:59:60`, which JavaScript's Date reads as no time at
 * all: a 500 on five routes); years 0001–9999, and on the first day of 0001 no offset ahead of UTC (`+01:00`), on the
 * last day of 9999 none behind it (`-01:00`), since either could be an instant outside those years
 * (`9999-12-31T23:59:59-01:00` is in year 10000: PostgreSQL refused it, or it came back as `+010000-…`, which is no
 * date-time). Until session 46 the bound was on the instant, which no schema could say, and schemathesis found
 * `0001-01-01T00:00:00+00:01` refused though the document allowed it.
 */
export const STORABLE_DATE_TIME_PATTERN =
  '^((000[2-9]|00[1-9]\\d|0[1-9]\\d{2}|[1-8]\\d{3}|9[0-8]\\d{2}|99[0-8]\\d|999[0-8])-\\d{2}-\\d{2}' +
  `${TIME}${OFFSET}` +
  `|0001-((0[2-9]|1[0-2])-\\d{2}|01-(0[2-9]|[1-3]\\d))${TIME}${OFFSET}` +
  `|0001-01-01${TIME}([Zz]|\\+00:00|-\\d{2}:\\d{2})` +
  `|9999-((0\\d|1[01])-\\d{2}|12-([0-2]\\d|30))${TIME}${OFFSET}` +
  `|9999-12-31${TIME}([Zz]|-00:00|\\+\\d{2}:\\d{2}))$`;
const STORABLE_DATE_TIME = new RegExp(STORABLE_DATE_TIME_PATTERN);

/** `date-time` as RFC 3339 has it, within STORABLE_DATE_TIME_PATTERN; anything else is a 400 naming the field. */
export function isStorableDateTime(s: string): boolean {
  return RFC3339_DATE_TIME.validate(s) && STORABLE_DATE_TIME.test(s) && !Number.isNaN(Date.parse(s));
}

/**
 * A schema keyword of request strings that hold ids (api/http/schemas.ts `Id`): validation writes every UUID in the
 * value in lower case, so an id in upper or mixed case names the row it names in lower case (UUIDs are
 * case-insensitive, RFC 9562). One place for every path, query and body parameter; the OpenAPI documents show the
 * keyword as the extension it is.
 */
export const UUID_ANY_CASE = 'x-uuid-any-case';

/**
 * A string schema's words for a value its `pattern` refuses, in place of ajv's `must match pattern "<regex>"`, which
 * leaves the reader to decode the expression. The OpenAPI documents carry it as the extension it is.
 */
export const PATTERN_MESSAGE = 'x-pattern-message';

function makeAjv(coerceTypes: boolean | 'array'): Ajv {
  // verbose: an error carries the schema it broke (parentSchema), so a value that is no object can be told the fields it takes
  const ajv = new Ajv({ coerceTypes, useDefaults: true, removeAdditional: false, allErrors: true, strict: false, verbose: true });
  addFormats(ajv);
  ajv.addFormat('date-time', { type: 'string', validate: isStorableDateTime });
  ajv.addKeyword({
    keyword: UUID_ANY_CASE,
    type: 'string',
    schemaType: 'boolean',
    modifying: true,
    errors: false,
    validate: (on: boolean, data: string, _schema?: unknown, cxt?: { parentData: Record<string | number, unknown>; parentDataProperty: string | number }) => {
      if (on && cxt?.parentData) cxt.parentData[cxt.parentDataProperty] = lowerCaseUuids(data);
      return true;
    },
  });
  return ajv;
}

const bodyAjv = makeAjv(false);
const paramsAjv = makeAjv('array');

/**
 * How a query, path or header string must be written to be read as a number: a plain decimal numeral, no blanks, no
 * sign but a leading `-`, no exponent (`1e3`), no hex; a `number` may have a fraction with digits on both sides of the
 * point (`0.5`, not `.5` or `5.`). The OpenAPI documents say so in their input policy (api/http/openapi.ts); until
 * session 48 a `number` took an exponent, which "plain decimal" did not say.
 */
export const NUMERAL = { integer: /^-?\d+$/, number: /^-?\d+(\.\d+)?$/ } as const;

interface PropertySchema {
  type?: string | string[];
  anyOf?: PropertySchema[];
  oneOf?: PropertySchema[];
  items?: PropertySchema;
}

/** The numeral a property's strings must match when it takes numbers and not strings, or undefined. */
function numeralOf(s: PropertySchema | undefined): RegExp | undefined {
  if (!s || typeof s !== 'object') return undefined;
  const types = new Set<string>();
  for (const part of [s, ...(s.anyOf ?? []), ...(s.oneOf ?? [])]) for (const t of [part.type ?? []].flat()) types.add(t);
  if (types.has('string')) return undefined;
  if (types.has('number')) return NUMERAL.number;
  if (types.has('integer')) return NUMERAL.integer;
  return undefined;
}

/**
 * ajv's coercion reads a string as a number the way JavaScript's `==` does: `limit=0x10` was 16, `limit=%20%201` was
 * 1 and `1e3` an integer, none of which the OpenAPI documents allow. A string for a property that takes numbers must
 * be a plain decimal numeral (NUMERAL, for `number` and `integer` alike without an exponent), or it is refused in
 * ajv's words before ajv coerces it.
 */
function strictNumerals(schema: object, validate: ReturnType<Ajv['compile']>): ReturnType<FastifySchemaCompiler<unknown>> {
  const properties = (schema as { properties?: Record<string, PropertySchema> }).properties ?? {};
  const checks: [string, RegExp, boolean][] = [];
  for (const [name, prop] of Object.entries(properties)) {
    const own = numeralOf(prop);
    if (own) checks.push([name, own, false]);
    const item = [prop.type].flat().includes('array') ? numeralOf(prop.items) : undefined;
    if (item) checks.push([name, item, true]);
  }
  if (!checks.length) return validate as ReturnType<FastifySchemaCompiler<unknown>>;
  const strict = (data: unknown) => {
    if (data && typeof data === 'object') {
      const errors: ErrorObject[] = [];
      for (const [name, numeral, inArray] of checks) {
        const value = (data as Record<string, unknown>)[name];
        const values = inArray && Array.isArray(value) ? value : [value];
        if (values.some((v) => typeof v === 'string' && !numeral.test(v))) {
          const type = numeral === NUMERAL.integer ? 'integer' : 'number';
          errors.push({ instancePath: `/${name.replace(/~/g, '~0').replace(/\//g, '~1')}`, schemaPath: `#/properties/${name}/type`, keyword: 'type', params: { type }, message: `must be ${type}` });
        }
      }
      if (errors.length) {
        strict.errors = errors;
        return false;
      }
    }
    const ok = validate(data);
    strict.errors = validate.errors;
    return ok;
  };
  strict.errors = null as ErrorObject[] | null | undefined;
  return strict as ReturnType<FastifySchemaCompiler<unknown>>;
}

/**
 * A route that takes query parameters refuses one it does not declare (400 naming it: `?staus=done` is never read as
 * no filter at all), whether or not its schema says so; a route that takes none has no querystring schema and ignores
 * any (a cache-busting `?_=1`). A schema that states `additionalProperties` keeps its own rule.
 */
function closedQuery(schema: object, httpPart: string | undefined): object {
  const s = schema as { type?: unknown; properties?: unknown; additionalProperties?: unknown };
  return httpPart === 'querystring' && s.type === 'object' && s.properties && s.additionalProperties === undefined ? { ...schema, additionalProperties: false } : schema;
}

/**
 * A query parameter that takes one value, given more than once (`?limit=1&limit=2`), arrives as an array: ajv said
 * `limit must be integer` (or `status must be string`), which the client, who sent integers, could not make sense of.
 * It is refused first, in words that say what is wrong.
 */
function singleValues(schema: object, validate: ReturnType<FastifySchemaCompiler<unknown>>): ReturnType<FastifySchemaCompiler<unknown>> {
  const properties = (schema as { properties?: Record<string, PropertySchema> }).properties ?? {};
  const single = Object.entries(properties)
    .filter(([, prop]) => prop && typeof prop === 'object' && ![prop, ...(prop.anyOf ?? []), ...(prop.oneOf ?? [])].some((part) => [part.type].flat().includes('array')))
    .map(([name]) => name);
  if (!single.length) return validate;
  const checked = (data: unknown) => {
    const repeated = data && typeof data === 'object' ? single.filter((name) => Array.isArray((data as Record<string, unknown>)[name])) : [];
    if (repeated.length) {
      checked.errors = repeated.map((name) => ({
        instancePath: `/${name.replace(/~/g, '~0').replace(/\//g, '~1')}`,
        schemaPath: `#/properties/${name}/type`,
        keyword: 'type',
        params: {},
        message: 'must be given once, not repeated',
      }));
      return false;
    }
    const ok = (validate as (d: unknown) => boolean)(data);
    checked.errors = (validate as { errors?: ErrorObject[] | null }).errors;
    return ok;
  };
  checked.errors = null as ErrorObject[] | null | undefined;
  return checked as ReturnType<FastifySchemaCompiler<unknown>>;
}

/**
 * A query parameter the operation does not declare is named with the ones it does (`staus is not a parameter of this
 * operation; it takes status, limit, offset`): the client learns the spelling from the answer. The names travel in
 * the error's params (`known`), which fieldMessage reads.
 */
function namedUnknownParameters(schema: object, validate: ReturnType<FastifySchemaCompiler<unknown>>): ReturnType<FastifySchemaCompiler<unknown>> {
  const known = Object.keys((schema as { properties?: Record<string, unknown> }).properties ?? {});
  const named = (data: unknown) => {
    const ok = (validate as (d: unknown) => boolean)(data);
    const errors = (validate as { errors?: ErrorObject[] | null }).errors;
    named.errors = errors?.map((e) => (e.keyword === 'additionalProperties' && e.instancePath === '' ? { ...e, params: { ...e.params, known } } : e));
    return ok;
  };
  named.errors = null as ErrorObject[] | null | undefined;
  return named as ReturnType<FastifySchemaCompiler<unknown>>;
}

export const validatorCompiler: FastifySchemaCompiler<unknown> = ({ schema, httpPart }) => {
  if (httpPart === 'body') return bodyAjv.compile(schema as object) as ReturnType<FastifySchemaCompiler<unknown>>;
  const closed = closedQuery(schema as object, httpPart);
  const strict = strictNumerals(closed, paramsAjv.compile(closed));
  return httpPart === 'querystring' ? singleValues(closed, namedUnknownParameters(closed, strict)) : strict;
};

/**
 * The error Fastify makes of failed schema validation (`validation` + `validationContext`, status 400), for a route's
 * own `schemaErrorFormatter` to fall back on when it gives only some errors a code of their own.
 */
export function schemaValidationError(errors: FastifySchemaValidationError[], dataVar: string): Error {
  return Object.assign(new Error(`${dataVar} is invalid`), { statusCode: 400, validation: errors, validationContext: dataVar });
}

/**
 * "Request <part> is invalid" / "are invalid", the opening of every 400 about one part of a request, by Fastify's
 * name of the part (`body`, `querystring`, `params`, `headers`). Path parameters are the request's path, as the
 * router's own 400s say ("Request params is invalid" named Fastify's word, not the request's); headers are plural
 * ("Request headers is invalid" read as a typo in every answer); the query is the query, as the OpenAPI documents
 * (`in: query`) and RFC 3986 call it ("Request querystring is invalid" was Fastify's word too).
 */
export function invalidPart(part: string | undefined): string {
  if (part === 'headers') return 'Request headers are invalid';
  if (part === 'params' || part === 'path') return 'Request path is invalid';
  if (part === 'querystring' || part === 'query') return 'Request query is invalid';
  return `Request ${part ?? 'input'} is invalid`;
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
  if (e.keyword === 'additionalProperties') {
    const known = (e.params as { known?: string[] }).known;
    if (!known) return 'is not a known field';
    return known.length ? `is not a parameter of this operation; it takes ${known.join(', ')}` : 'is not a parameter of this operation, which takes none';
  }
  if (e.keyword === 'false schema') return 'is not allowed here';
  if (e.keyword === 'enum') return `must be one of: ${((e.params as { allowedValues: unknown[] }).allowedValues ?? []).join(', ')}`;
  if (e.keyword === 'type' && (e.params as { type?: unknown }).type === 'object') return objectExpected(e.parentSchema);
  if (e.keyword === 'pattern') {
    const own = (e.parentSchema as Record<string, unknown> | undefined)?.[PATTERN_MESSAGE];
    if (typeof own === 'string') return own;
  }
  return e.message ?? 'is invalid';
}

/** The most fields an "must be an object" message names before "…". */
const MAX_NAMED_FIELDS = 12;

/**
 * "must be an object" with the fields the object takes, required ones first, e.g. `repository` sent as a string:
 * "must be an object with url (and optionally branch)" — it said "must be object", which left the shape to the docs.
 */
function objectExpected(schema: unknown): string {
  const props = (schema as { properties?: Record<string, unknown> } | undefined)?.properties;
  const names = props ? Object.keys(props) : [];
  if (!names.length) return 'must be an object';
  const required = new Set(((schema as { required?: unknown }).required as string[] | undefined) ?? []);
  const list = (xs: string[]) => (xs.length > MAX_NAMED_FIELDS ? [...xs.slice(0, MAX_NAMED_FIELDS), '…'] : xs).join(', ');
  const must = names.filter((n) => required.has(n));
  const may = names.filter((n) => !required.has(n));
  if (!must.length) return `must be an object (fields: ${list(may)})`;
  return `must be an object with ${list(must)}${may.length ? ` (and optionally ${list(may)})` : ''}`;
}

/** The most fields a 400's `details` names; the rest are counted in one more entry, `(more)`. */
export const MAX_DETAIL_FIELDS = 50;

/**
 * Maps ajv errors to `{ "<field path>": "<message>" }`, the first message per field winning. Kept in a Map: on a plain
 * object `key in details` was true for `toString` or `constructor` (inherited) and `details.__proto__ = …` set no key,
 * so a field of such a name was named nowhere (`Request querystring is invalid`, details `{}`).
 * At most MAX_DETAIL_FIELDS fields, then `(more)`: "<n> more fields are invalid, not listed here". Every field was
 * named: 100,000 labels that are no strings (a 0.7 MB body) were answered with 3 MB of details, seconds of CPU
 * (session 49's outside round).
 */
export function validationDetails(errors: ErrorObject[], context?: string): Record<string, string> {
  const details = new Map<string, string>();
  const unlisted = new Set<string>();
  for (const e of errors) {
    const key = fieldPath(e) || context || 'body';
    if (details.has(key)) continue;
    if (details.size < MAX_DETAIL_FIELDS) details.set(key, fieldMessage(e));
    else unlisted.add(key);
  }
  if (unlisted.size) details.set('(more)', `${unlisted.size} more ${unlisted.size === 1 ? 'field is' : 'fields are'} invalid, not listed here`);
  return Object.fromEntries(details);
}
