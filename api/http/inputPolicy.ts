/**
 * The input policy every service shares (docs/security.md, "Input policy"): every string in a request (path
 * parameter, query parameter, header, JSON body value or key) is text PostgreSQL can store: no NUL (U+0000), which
 * text and jsonb refuse, and no unpaired UTF-16 surrogate (a JSON `"\ud800"` escape without its pair), which jsonb
 * refuses and text would store as U+FFFD. Such a request is a 400 in the service's error shape naming the field,
 * before validation and before any handler. The OpenAPI documents say the same through a `pattern` on every request
 * string against NUL (`nulFreeStrings`) and sentences in the document's description.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { AppError, validationError } from '../../lib/errors';
import { invalidPart, STORABLE_DATE_TIME_PATTERN } from './validation';

/**
 * A regular expression (ECMA-262 and Python) matching strings without NUL. Unpaired surrogates are not in it: a
 * pattern naming U+D800–U+DFFF is not a regular expression for Rust or Go (schemathesis's validator, jsonschema-rs,
 * refuses it), so the documents state that rule in their description.
 */
export const NUL_FREE_PATTERN = '^[^\\u0000]*$';

/**
 * A path parameter's NUL ban in the documents: `not: { pattern: NUL_PATTERN }` (a string that holds no NUL), the same
 * rule as NUL_FREE_PATTERN. Beside a path parameter's maxLength that pattern made schemathesis' `--mode negative` fail
 * with "Cannot generate test data" on operations whose only input is the path (seed 5311, scheduler, session 53): to
 * break the maxLength it must draw over 200 characters through the pattern's `*`, which it gives up on, and NUL, which
 * breaks the pattern, it does not generate by default. Under `not` the long string is drawn directly.
 */
export const NUL_PATTERN = '\\u0000';

/** A path parameter's schema with the NUL-free pattern said as `not: { pattern: NUL_PATTERN }` (NUL_PATTERN). */
export function nulFreePathParams<T>(params: T): T {
  const props = (params as { properties?: Record<string, Record<string, unknown>> }).properties;
  if (!props) return params;
  const out = Object.fromEntries(
    Object.entries(props).map(([name, p]) => {
      if (p.pattern !== NUL_FREE_PATTERN || 'not' in p) return [name, p];
      const { pattern: _, ...rest } = p;
      return [name, { ...rest, not: { pattern: NUL_PATTERN } }];
    }),
  );
  return { ...params, properties: out } as T;
}

/** What `String.prototype.trim()` removes, as written inside a character class. */
export const BLANK_CHARACTERS = '\\t\\n\\v\\f\\r \\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000\\ufeff';

/**
 * A regular expression (ECMA-262 and Python alike) matching strings with a character that `String.prototype.trim()`
 * keeps: names and titles are stored trimmed, so a blank one is refused (400) rather than stored empty. An explicit
 * class, because `\S` means different things in the two: JavaScript counts U+FEFF as white space, Python counts
 * U+001C–U+001F and U+0085, and schemathesis generates with Python's.
 */
export const NON_BLANK_PATTERN = `[^${BLANK_CHARACTERS}]`;

/**
 * NON_BLANK_PATTERN for a whole string that must also not hold any of `excluded` (as written inside a character
 * class, e.g. ','): one pattern, because a schema has one `pattern` and a value that is split on a separator (task
 * labels in the `labels` filter) must neither hold it nor be blank.
 */
export const nonBlankPatternWithout = (excluded: string): string => `^[^${excluded}]*[^${excluded}${BLANK_CHARACTERS}][^${excluded}]*$`;

/**
 * C0 and C1 controls and the bidi embedding, override and isolate characters, as written inside a character class: a
 * name the CLI prints (a project's, a scheduler source's) reaches terminals and lists as it is, where an escape
 * sequence or an override would change what is shown around it. Such names are `nonBlankPatternWithout(NAME_CONTROLS)`.
 */
export const NAME_CONTROLS = '\\u0000-\\u001f\\u007f-\\u009f\\u202a-\\u202e\\u2066-\\u2069';

/**
 * The pattern of a name or title shown on one line (a task's title, an assignee, a template's name, a workflow's
 * task name, a trace's instance): not blank, and none of NAME_CONTROLS. Such fields are short (at most 500
 * characters), which this pattern needs: a string of n characters ending in a control takes it O(n²) steps to refuse.
 */
export const NAME_PATTERN = nonBlankPatternWithout(NAME_CONTROLS);

/**
 * The C0 controls multi-line text may not hold, as written inside a character class: all of U+0000–U+001F but tab,
 * line feed and carriage return. A description or a prompt is text a person wrote or pasted; an escape sequence or a
 * bell in it reaches the board, terminals and agents' prompts as it is, and NUL cannot be stored at all.
 */
export const TEXT_CONTROLS = '\\u0000-\\u0008\\u000b\\u000c\\u000e-\\u001f';

/** The pattern of multi-line text that may be empty (descriptions, comments, scripts, messages): no TEXT_CONTROLS. */
export const TEXT_PATTERN = `^[^${TEXT_CONTROLS}]*$`;

/**
 * The pattern of multi-line text that must not be blank (a prompt, an agent memory's content): white space that is
 * no TEXT_CONTROLS first, then one character trim() keeps, then no TEXT_CONTROLS. Written so (not as
 * `nonBlankPatternWithout`) because such text runs to 100 000 characters: every character is matched one way, so a
 * match takes linear time.
 */
export const NON_BLANK_TEXT_PATTERN = `^[\\t\\n\\r \\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000\\ufeff]*[^${TEXT_CONTROLS}${BLANK_CHARACTERS}][^${TEXT_CONTROLS}]*$`;

/** The longest path parameter any route accepts; the documents advertise it as each parameter's `maxLength`. */
export const MAX_PATH_PARAM_LENGTH = 200;

/**
 * The most header lines a request may have. Node's parser keeps the first 1000 by default and drops the rest without
 * a word; the services have it keep one more (baseApp.ts), so a request past this is told so (headerCountError).
 */
export const MAX_HEADER_LINES = 1000;

/** Page numbers and offsets stop here, so `page × limit` and `offset` stay far below PostgreSQL's bigint. */
export const MAX_PAGE = 1_000_000;
export const MAX_OFFSET = 2_147_483_647;

const NUL_MESSAGE = 'must not contain NUL (\\u0000) characters';
const SURROGATE_MESSAGE = 'must be well-formed Unicode: it holds an unpaired UTF-16 surrogate (U+D800–U+DFFF); send each astral character as a pair, or as UTF-8';

/**
 * The deepest nesting of arrays and objects a request's JSON may have (the body itself is level 1). Deeper input is a
 * 400: code that walks a value recursively (serialisers, JSON.stringify, PostgreSQL's jsonb parser) would otherwise
 * run out of stack on it, and no document of Armada needs more.
 */
export const MAX_JSON_DEPTH = 100;

/** The largest request body a service reads (Fastify's bodyLimit); a longer one is a 413. */
export const MAX_BODY_BYTES = 1024 * 1024;

const DEPTH_MESSAGE = `must not nest arrays and objects more than ${MAX_JSON_DEPTH} levels deep`;

/**
 * What is wrong with a part of a request: the dotted path of the first NUL or unpaired surrogate, or the top-level
 * field holding a value nested too deep ('' when the part itself is an array).
 */
export type InputProblem = { kind: 'nul' | 'surrogate' | 'number' | 'depth'; path: string };

/** Why string `s` cannot be stored as text, if it cannot. */
function textProblem(s: string): 'nul' | 'surrogate' | undefined {
  if (s.includes('\u0000')) return 'nul';
  return (s as string & { isWellFormed(): boolean }).isWellFormed() ? undefined : 'surrogate';
}

/** A key as the message shows it: NUL and unpaired surrogates escaped, so the message itself is storable text. */
const shownKey = (key: string): string =>
  key.replaceAll('\u0000', '\\u0000').replace(/[\ud800-\udfff]/gu, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);

/**
 * The first problem under `value`, walking it without recursion (so a value nested thousands of levels deep is
 * found, not a stack overflow): a string or object key holding a NUL or an unpaired surrogate, a number too large to
 * hold, or an array or object nested more than MAX_JSON_DEPTH levels deep.
 */
export function inputProblem(value: unknown): InputProblem | undefined {
  const stack: { value: unknown; path: string[]; depth: number }[] = [{ value, path: [], depth: 0 }];
  while (stack.length) {
    const { value: v, path, depth } = stack.pop() as (typeof stack)[number];
    if (typeof v === 'string') {
      const kind = textProblem(v);
      if (kind) return { kind, path: path.join('.') };
      continue;
    }
    // JSON has no bound on numbers, but a parsed one beyond ±1.8e308 is Infinity and would be stored as null
    if (typeof v === 'number' && !Number.isFinite(v)) return { kind: 'number', path: path.join('.') };
    if (v === null || typeof v !== 'object') continue;
    // named by the top-level field it is under (the whole path would repeat a key a hundred times)
    if (depth + 1 > MAX_JSON_DEPTH) return { kind: 'depth', path: Array.isArray(value) ? '' : (path[0] ?? '') };
    const children: { value: unknown; path: string[]; depth: number }[] = [];
    if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++) children.push({ value: v[i], path: [...path, String(i)], depth: depth + 1 });
    } else {
      for (const [key, child] of Object.entries(v)) {
        const kind = textProblem(key);
        if (kind) return { kind, path: [...path, shownKey(key)].join('.') };
        children.push({ value: child, path: [...path, key], depth: depth + 1 });
      }
    }
    // in document order: the first child is taken from the stack first
    for (let i = children.length - 1; i >= 0; i--) stack.push(children[i] as (typeof children)[number]);
  }
  return undefined;
}

const PARTS = [
  ['params', 'path'],
  ['query', 'querystring'],
  ['headers', 'headers'],
  ['body', 'body'],
] as const;

const NUMBER_MESSAGE = 'must be a number a double can hold (at most about ±1.8e308)';
const MESSAGES: Record<InputProblem['kind'], string> = { nul: NUL_MESSAGE, surrogate: SURROGATE_MESSAGE, number: NUMBER_MESSAGE, depth: DEPTH_MESSAGE };

/** The 400 for the first string that is not storable text, or too deep value, in a request; undefined when none. */
export function inputPolicyError(request: Pick<FastifyRequest, 'params' | 'query' | 'headers' | 'body'>): Error | undefined {
  for (const [part, name] of PARTS) {
    const problem = inputProblem(request[part]);
    if (problem === undefined) continue;
    const label = problem.path || name;
    const message = MESSAGES[problem.kind];
    return validationError(`${invalidPart(name)}: ${label} ${message}`, { [label]: message });
  }
  return undefined;
}

/**
 * Rejects strings that are not storable text (NUL, unpaired surrogates), numbers beyond a double, and JSON nested
 * more than MAX_JSON_DEPTH levels, in every part of every request, before schema validation (so also for routes
 * without a schema); and an HTTP/1.1 request without Host, first of all.
 */
export function installInputPolicy(app: FastifyInstance): void {
  app.addHook('onRequest', async (request) => {
    const err = headerCountError(request) ?? hostHeaderError(request) ?? asteriskFormError(request);
    if (err) throw err;
  });
  app.addHook('preParsing', async (request, reply) => {
    const once = contentTypeLinesError(request);
    if (once) throw once;
    ignoreContentTypeOfNothing(request);
    const err = contentEncodingError(request) ?? transferCodingError(request);
    if (!err) return;
    reply.header('accept-encoding', 'identity');
    throw err;
  });
  app.addHook('preValidation', async (request) => {
    const err = queryEncodingError(request.url) ?? repeatedHeaderError(request) ?? inputPolicyError(request);
    if (err) throw err;
  });
}

/**
 * A query string whose percent-encoding is malformed (`%FF` alone is no UTF-8, `%zz` no escape) is a 400 naming the
 * parameter, as such a path is. The query parser kept such a value as its literal text, so `path=%2Ftmp%FF` got a
 * pattern error about a value the client never meant.
 */
export function queryEncodingError(url: string): AppError | undefined {
  const q = url.indexOf('?');
  if (q < 0 || !url.includes('%', q)) return undefined;
  for (const pair of url.slice(q + 1).split('&')) {
    if (!pair.includes('%')) continue;
    const eq = pair.indexOf('=');
    const rawName = eq < 0 ? pair : pair.slice(0, eq);
    try {
      decodeURIComponent(pair.replace(/\+/g, ' '));
    } catch {
      let name = rawName;
      try {
        name = decodeURIComponent(rawName.replace(/\+/g, ' '));
      } catch {
        name = 'querystring';
      }
      const message = 'is not valid percent-encoding (each % takes two hex digits, and the bytes must be UTF-8)';
      return validationError(`${invalidPart('querystring')}: ${name.slice(0, 100)} ${message}`, { [name.slice(0, 100)]: message });
    }
  }
  return undefined;
}

/**
 * A request of more than MAX_HEADER_LINES header lines is a 431, first of all (before authentication). Node's parser
 * dropped the lines past its limit (1000) without a word: a request whose X-API-Key came after 1000 others was a 401
 * "Invalid API key" with the right key, a JSON body whose Content-Type came late "body must be object", and a second
 * Host or Content-Type line there escaped the "must be sent once" rules (session 49's outside round).
 */
export function headerCountError(request: FastifyRequest): AppError | undefined {
  if (request.raw.rawHeaders.length <= 2 * MAX_HEADER_LINES) return undefined;
  return new AppError(431, 'VALIDATION_ERROR', `Request headers are more than ${MAX_HEADER_LINES} lines; send fewer headers`, { headers: `at most ${MAX_HEADER_LINES} lines` });
}

/**
 * An HTTP/1.1 request must name its host, once, as a valid `uri-host[:port]` (RFC 9112 §3.2: a server MUST answer 400
 * to a request without one, with more than one Host line, or with an invalid value). Node refused a missing one
 * itself, with an empty body, and let the others through; the services tell Node not to (baseApp.ts) and answer all
 * three here, in their shape. An empty Host is valid (a target URI without an authority).
 */
const HOST_VALUE = /^(?:\[(?:[0-9A-Fa-f:.]+|v[0-9A-Fa-f]+\.[A-Za-z0-9\-._~!$&'()*+,;=:]+)\]|(?:[A-Za-z0-9\-._~!$&'()*+,;=]|%[0-9A-Fa-f]{2})*)(?::[0-9]*)?$/;

export function hostHeaderError(request: FastifyRequest): AppError | undefined {
  const v = request.raw.httpVersion;
  if (headerLines(request, 'host') > 1) return sentMoreThanOnce('host');
  const host = request.headers.host;
  if (host === undefined) {
    if (v === '1.0' || v === '0.9') return undefined;
    return validationError('Request headers are invalid: host is required (HTTP/1.1)', { host: 'is required' });
  }
  if (!HOST_VALUE.test(host)) return validationError('Request headers are invalid: host must be a host name or address with an optional port', { host: 'must be a host name or address with an optional port' });
  return undefined;
}

/**
 * The asterisk-form target `*` is for OPTIONS alone (RFC 9112 §3.2.4): `OPTIONS *` asks which methods the service
 * serves (204 with Allow, api/http/errorHandlers.ts). Any other method with it names no resource: the task service
 * answered `GET *` with the board's page (200), the others 404 "Not Found: GET *". A 400 saying what to send.
 */
export function asteriskFormError(request: FastifyRequest): AppError | undefined {
  if (request.raw.url !== '*' || request.method === 'OPTIONS') return undefined;
  return validationError(`Request path is invalid: "*" is a target for OPTIONS only; send ${request.method} to a path of the service, such as /health`, { path: 'must be a path (an absolute path, or an http(s) URL)' });
}

/**
 * Content-Type is one value (RFC 9110 §8.3): two lines of it (`application/json` and `text/plain`) say two things of
 * one body. Node keeps the first line and drops the others, so the order decided: JSON first was parsed as JSON,
 * `text/plain` first was a 415. Sent more than once, it is a 400 whatever the lines say, as two Host lines are.
 */
export function contentTypeLinesError(request: FastifyRequest): AppError | undefined {
  return headerLines(request, 'content-type') > 1 ? sentMoreThanOnce('content-type') : undefined;
}

/**
 * A header the operation documents (`Last-Event-ID`, `Idempotency-Key`), sent on more than one line, is a 400 as two
 * Host lines are: Node joins such lines with ", ", so `Last-Event-ID: 1` and `Last-Event-ID: 2` were "last-event-id
 * must be integer", of two integers.
 */
export function repeatedHeaderError(request: FastifyRequest): AppError | undefined {
  const declared = (request.routeOptions.schema?.headers as { properties?: Record<string, unknown> } | undefined)?.properties;
  if (!declared) return undefined;
  for (const name of Object.keys(declared)) if (headerLines(request, name.toLowerCase()) > 1) return sentMoreThanOnce(name.toLowerCase());
  return undefined;
}

/** How many lines of the header `name` (lower case) the request has: Node's `headers` keeps only the first of some. */
function headerLines(request: FastifyRequest, name: string): number {
  const raw = request.raw.rawHeaders;
  let lines = 0;
  for (let i = 0; i < raw.length; i += 2) if (raw[i]?.length === name.length && raw[i]?.toLowerCase() === name) lines++;
  return lines;
}

/** The 400 for a header that is one value sent on more than one line. */
function sentMoreThanOnce(name: string): AppError {
  return validationError(`Request headers are invalid: ${name} must be sent once`, { [name]: 'must be sent once' });
}

/**
 * A request without content (no Content-Length or 0, not chunked) to a route that takes no body (no body schema:
 * DELETEs, cancels, an unknown path) is handled as if it named no Content-Type: the header describes nothing. A
 * client that sends `Content-Type: application/json` on every request (a session-wide default) got 400 "Body cannot
 * be empty" for every DELETE and cancel, and `text/plain` a 415 for a body it never sent, though those operations
 * document no request body (a Content-Encoding of no body was already ignored, as in contentEncodingError). A route
 * that takes a body still says its body is missing.
 */
export function ignoreContentTypeOfNothing(request: FastifyRequest): void {
  const headers = request.headers;
  if (headers['content-type'] === undefined || headers['transfer-encoding'] !== undefined) return;
  const length = headers['content-length'];
  if ((length !== undefined && length !== '0') || request.routeOptions.schema?.body !== undefined) return;
  delete headers['content-type'];
}

/**
 * Request bodies are read as they arrive: a body sent compressed (`Content-Encoding: gzip`) used to be parsed as
 * JSON and answered "Malformed JSON", or read as plain JSON when the header named a coding the body did not have.
 * Such a request is a 415 saying to send the body uncompressed (RFC 9110 §15.5.16; `Accept-Encoding: identity`
 * on the answer, RFC 7694). A request without a body may carry any Content-Encoding.
 */
export function contentEncodingError(request: FastifyRequest): AppError | undefined {
  const header = request.headers['content-encoding'];
  if (header === undefined) return undefined;
  const codings = (Array.isArray(header) ? header.join(',') : header)
    .split(',')
    .map((c) => c.trim().toLowerCase())
    .filter((c) => c !== '' && c !== 'identity');
  if (codings.length === 0) return undefined;
  const length = request.headers['content-length'];
  const hasBody = request.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
  if (!hasBody) return undefined;
  return new AppError(415, 'VALIDATION_ERROR', `Content-Encoding ${codings.join(', ')} is not supported: send the request body uncompressed (no Content-Encoding header)`, {
    'content-encoding': 'must be absent or identity',
  });
}

/**
 * A transfer coding other than chunked (`Transfer-Encoding: gzip, chunked`): Node's parser undoes only the chunking
 * and handed the compressed bytes on, answered "not valid UTF-8" or "Malformed JSON". Such a body is refused as a
 * compressed one is: the 415 of contentEncodingError (the coding is understood, the service reads bodies only as
 * sent; no 501, which would say the fault is the server's). A list whose last coding is not chunked never gets here:
 * the parser answers it 400 and closes (RFC 9112 §6.3). `identity` is ignored, as in Content-Encoding.
 */
export function transferCodingError(request: FastifyRequest): AppError | undefined {
  const header = request.headers['transfer-encoding'];
  if (header === undefined) return undefined;
  const codings = (Array.isArray(header) ? header.join(',') : header)
    .split(',')
    .map((c) => c.trim().toLowerCase())
    .filter((c) => c !== '' && c !== 'identity' && c !== 'chunked');
  if (codings.length === 0) return undefined;
  return new AppError(415, 'VALIDATION_ERROR', `Transfer-Encoding ${codings.join(', ').slice(0, 100)} is not supported: send the request body uncompressed (Transfer-Encoding: chunked or a Content-Length)`, {
    'transfer-encoding': 'must be chunked alone, or absent',
  });
}

type JsonSchema = Record<string, unknown>;

/**
 * A copy of a request schema where every string without a `format`, `enum` or `const` (each of which already
 * excludes NUL or says what it accepts) carries NUL_FREE_PATTERN, for the OpenAPI document.
 */
export function nulFreeStrings<T>(schema: T): T {
  if (Array.isArray(schema)) return schema.map((s) => nulFreeStrings(s)) as T;
  if (schema === null || typeof schema !== 'object') return schema;
  const out: JsonSchema = {};
  for (const [key, value] of Object.entries(schema as JsonSchema)) {
    // `properties` maps names to schemas; `examples`, `default` and `const` are data, left as they are
    if (key === 'properties' || key === 'patternProperties' || key === '$defs' || key === 'definitions') {
      out[key] = Object.fromEntries(Object.entries(value as JsonSchema).map(([k, v]) => [k, nulFreeStrings(v)]));
    } else if (['items', 'additionalProperties', 'anyOf', 'oneOf', 'allOf', 'not', 'if', 'then', 'else', 'prefixItems', 'contains', 'propertyNames'].includes(key)) {
      out[key] = nulFreeStrings(value);
    } else out[key] = value;
  }
  const types = Array.isArray(out.type) ? out.type : [out.type];
  // a date-time's bounds, which its format cannot say (api/http/validation.ts): the same pattern validation applies
  if (types.includes('string') && out.format === 'date-time' && !('pattern' in out)) out.pattern = STORABLE_DATE_TIME_PATTERN;
  if (types.includes('string') && !('format' in out) && !('enum' in out) && !('const' in out)) {
    // a string with a pattern of its own that admits NUL (e.g. `\S`) still must not hold it: both patterns apply
    if (!('pattern' in out)) out.pattern = NUL_FREE_PATTERN;
    else if (!patternRefusesNul(out.pattern) && !('allOf' in out)) out.allOf = [{ pattern: NUL_FREE_PATTERN }];
  }
  // A free-form value (no type, no composition: TypeBox's Unknown, `{}`) may be any JSON but must hold no NUL either
  if (isFreeForm(out)) return { ...out, $ref: NUL_FREE_JSON_REF } as T;
  if (out.additionalProperties === true) out.additionalProperties = { $ref: NUL_FREE_JSON_REF };
  // object keys are checked too: an object that takes keys beyond its named properties says they are NUL-free
  const isObject = types.includes('object') || 'properties' in out || 'patternProperties' in out;
  if (isObject && out.additionalProperties !== false && !('propertyNames' in out)) out.propertyNames = { pattern: NUL_FREE_PATTERN };
  // and the values of those extra keys are free-form: NUL-free JSON
  if (isObject && out.additionalProperties === undefined && !('patternProperties' in out)) out.additionalProperties = { $ref: NUL_FREE_JSON_REF };
  return out as T;
}

/**
 * True when `pattern` can match no string holding NUL, read from its text: anchored at both ends (`^…$`) with nothing
 * between but character classes, each with `*`, `+`, `?` or no quantifier, where every negated class names U+0000
 * (`[^\u0000-\u0008…]`, as TEXT_PATTERN and NAME_PATTERN do) and no other class can match it (only literal characters,
 * `\uXXXX`, `\t`, `\n`, `\r`, `\v`, `\f` and escaped punctuation, none of them U+0000). Any other pattern counts as
 * admitting NUL. A string whose pattern refuses NUL gets no NUL_FREE_PATTERN beside it: that `allOf` would say nothing
 * more, and schemathesis' coverage phase, which drops a long string's own pattern when it makes one a character over
 * its maxLength, drew every one of those 20,001–100,001 characters through the `allOf`'s pattern (~110 s of CPU for one
 * such field; docs/testing.md, "Inside the long files").
 */
export function patternRefusesNul(pattern: unknown): boolean {
  if (typeof pattern !== 'string' || !pattern.startsWith('^') || !pattern.endsWith('$') || pattern.endsWith('\\$')) return false;
  const body = pattern.slice(1, -1);
  const classes = /\[(\^?)((?:\\u[0-9a-fA-F]{4}|\\[^u]|[^\\\]])*)\][*+?]?/y;
  let end = 0;
  for (let m = classes.exec(body); m; m = classes.exec(body)) {
    end = classes.lastIndex;
    const codes = (m[2]?.match(/\\u[0-9a-fA-F]{4}|\\.|[^\\]/g) ?? []).map(classCode);
    // a negated class matches NUL unless it names it, as an item or as a range's end (whose start is then U+0000 too)
    if (m[1] === '^' ? !codes.includes(0) : codes.some((c) => c === 0 || c === undefined)) return false;
  }
  return end > 0 && end === body.length;
}

/** The character one item of a character class stands for; undefined for a class escape such as `\S` or `\W`. */
function classCode(item: string): number | undefined {
  if (item.startsWith('\\u')) return Number.parseInt(item.slice(2), 16);
  if (!item.startsWith('\\')) return item.charCodeAt(0);
  const control: Record<string, number> = { t: 9, n: 10, v: 11, f: 12, r: 13 };
  const c = item.slice(1);
  if (c in control) return control[c];
  return /^[\\\][^\-/.*+?(){}|$]$/.test(c) ? c.charCodeAt(0) : undefined;
}

const SCHEMA_KEYWORDS = ['type', '$ref', 'anyOf', 'oneOf', 'allOf', 'not', 'enum', 'const', 'properties', 'patternProperties', 'items', 'if'];
function isFreeForm(s: JsonSchema): boolean {
  return !SCHEMA_KEYWORDS.some((k) => k in s);
}

/** Where the OpenAPI documents define NulFreeJson (components.schemas). */
export const NUL_FREE_JSON_REF = '#/components/schemas/NulFreeJson';

/**
 * Any JSON value whose strings and object keys hold no NUL (and, as the description says, no unpaired surrogate):
 * what the input policy accepts in free-form fields.
 */
export const NUL_FREE_JSON_SCHEMA = {
  description: 'any JSON value whose strings and object keys contain no NUL (U+0000) and no unpaired UTF-16 surrogate',
  anyOf: [
    { type: 'string', pattern: NUL_FREE_PATTERN },
    { type: ['number', 'boolean', 'null'] },
    { type: 'array', items: { $ref: NUL_FREE_JSON_REF } },
    { type: 'object', propertyNames: { pattern: NUL_FREE_PATTERN }, additionalProperties: { $ref: NUL_FREE_JSON_REF } },
  ],
};
