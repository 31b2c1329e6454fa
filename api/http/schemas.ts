/** Schemas shared by every task-service route: the envelope, pagination and error bodies. */
import { Type, type TSchema, type TString, type TUnsafe } from 'typebox';
import { MAX_OFFSET, MAX_PAGE, MAX_PATH_PARAM_LENGTH } from './inputPolicy';
import { BRANCH_NAME_PATTERN } from '../../lib/git';
import { UUID_ANY_CASE } from './validation';

export const MetaSchema = Type.Object({ timestamp: Type.String(), version: Type.String() });

export const PaginationSchema = Type.Object({
  page: Type.Integer(),
  limit: Type.Integer(),
  total: Type.Integer(),
  pages: Type.Integer(),
  hasNext: Type.Boolean(),
  hasPrev: Type.Boolean(),
});

export const ErrorSchema = Type.Object({
  success: Type.Literal(false),
  error: Type.Object({
    code: Type.String(),
    message: Type.String(),
    details: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
  }),
  meta: Type.Optional(MetaSchema),
});

/** `{success:true, data, meta}` around a data schema. */
export function Envelope<T extends TSchema>(data: T) {
  return Type.Object({ success: Type.Literal(true), data, meta: MetaSchema });
}

/** `{success:true, data:[…], pagination, meta}` around an item schema. */
export function PagedEnvelope<T extends TSchema>(item: T) {
  return Type.Object({ success: Type.Literal(true), data: Type.Array(item), pagination: PaginationSchema, meta: MetaSchema });
}

/** The error responses every route may give, for the response schema and the OpenAPI document. */
export const ErrorResponses = {
  400: ErrorSchema,
  401: ErrorSchema,
  403: ErrorSchema,
  404: ErrorSchema,
  409: ErrorSchema,
  429: ErrorSchema,
  500: ErrorSchema,
};

/** A page number (from 1) and an offset (from 0), bounded so no page × limit or offset overflows (docs/security.md). */
export const PageNumber = Type.Integer({ minimum: 1, maximum: MAX_PAGE, default: 1 });
export const Offset = Type.Integer({ minimum: 0, maximum: MAX_OFFSET, default: 0 });
/**
 * A stream's resume point (`after=<seq>`): a sequence number the server handed out, bounded like every numeric
 * parameter by what its column holds: `events.seq` is a bigint (the bound is JavaScript's safe integers),
 * `process_logs.seq` an integer (2^31 − 1; above it PostgreSQL would refuse the comparison).
 */
export const SEQ_MAX = { bigint: Number.MAX_SAFE_INTEGER, integer: 2_147_483_647 } as const;
export const SeqAfter = (description: string, column: keyof typeof SEQ_MAX) => Type.Integer({ minimum: 0, maximum: SEQ_MAX[column], description });

export const PageQuery = {
  page: PageNumber,
  limit: Type.Integer({ minimum: 1, maximum: 100, default: 20 }),
};

/**
 * An id in a request (path, query or body; 1 to 200 characters unless `bounds` say otherwise). The ids handed out are UUIDs, which
 * are case-insensitive (RFC 9562): a UUID written in upper or mixed case is read in lower case (UUID_ANY_CASE,
 * api/http/validation.ts), so it names the same row. Any other string is looked up as written.
 */
export const Id = (bounds: { minLength?: number; maxLength?: number } = { minLength: 1, maxLength: MAX_PATH_PARAM_LENGTH }): TString =>
  Type.String({ ...bounds, description: 'an id; a UUID may be written in any letter case', [UUID_ANY_CASE]: true });

export const IdParams = Type.Object({ id: Id() });

/**
 * A git branch name: what `git check-ref-format --branch` accepts (BRANCH_NAME_PATTERN, lib/git.ts), so a name git
 * would refuse, or read as an option (`--orphan=x`), is a 400 naming the field, and the document says the rule.
 */
export const BranchName = (options: { default?: string; description?: string } = {}): TString =>
  Type.String({
    minLength: 1,
    maxLength: 250,
    pattern: BRANCH_NAME_PATTERN,
    ...options,
    description: `${options.description ? `${options.description}; ` : ''}a branch name git accepts (git check-ref-format --branch): not HEAD, no leading -, no control characters, spaces or ~^:?*[\\, no .. or @{, no leading, trailing or doubled /, no component starting with . or ending with .lock, not ending with .`,
  });

/** JSON Schema `if`/`then`: when `condition` holds, `consequence` must too (for `allOf` in a schema's options). */
export function ifThen(condition: Record<string, unknown>, consequence: Record<string, unknown>): Record<string, unknown> {
  // biome-ignore lint/suspicious/noThenProperty: `then` is the JSON Schema keyword, not a thenable
  return { if: condition, then: consequence };
}

/** A nullable value (TypeBox union with null). */
export const Nullable = <T extends TSchema>(s: T) => Type.Union([s, Type.Null()]);

export const Timestamp = Type.String({ format: 'date-time' });

/** A string enum as plain JSON Schema (`{type:'string', enum}`), so a bad value gets one clear error listing the values. */
export function StringEnum<const T extends readonly string[]>(values: T, options: { default?: T[number]; description?: string } = {}): TUnsafe<T[number]> {
  return Type.Unsafe<T[number]>({ type: 'string', enum: [...values], ...options });
}
