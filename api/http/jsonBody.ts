/**
 * The JSON body parser of every service: Fastify's own (its limits and `__proto__` rules, set in baseApp.ts), fed only
 * UTF-8. Fastify decoded the body as UTF-8 whatever its bytes were, so an invalid sequence was stored as U+FFFD
 * (`caf\xe9` became `caf�`) and a body declared in another charset was read as UTF-8 anyway. JSON exchanged between
 * systems must be UTF-8 (RFC 8259 §8.1): a body whose bytes are not is a 400, a charset other than UTF-8 a 415. A
 * nonzero number too small for a double (`1e-400`, which parses to 0) is a 400 naming it (lib/jsonNumbers.ts).
 */
import type { FastifyInstance } from 'fastify';
import { validationError } from '../../lib/errors';
import { UNDERFLOW_MESSAGE, underflowingNumberPath } from '../../lib/jsonNumbers';

const UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** One `; name=value` parameter of a Content-Type; a quoted value may hold `;` and escaped quotes (RFC 9110 §5.6.6). */
const PARAMETER = /;\s*([^=;\s]*)\s*(?:=\s*("(?:[^"\\]|\\.)*"|[^;]*))?/g;

/**
 * Every `charset` parameter of a Content-Type (lower-cased, unquoted, in order); none when there is none. All of them,
 * not the first: `charset=utf-8; charset=latin1` was read as UTF-8 and `charset=latin1; charset=utf-8` refused, so
 * the order of two contradicting parameters decided. A charset inside another parameter's quoted value is no charset.
 */
function charsetsOf(contentType: string | undefined): string[] {
  const type = contentType ?? '';
  const semicolon = type.indexOf(';');
  if (semicolon < 0) return [];
  const charsets: string[] = [];
  for (const m of type.slice(semicolon).matchAll(PARAMETER)) {
    if ((m[1] ?? '').toLowerCase() !== 'charset') continue;
    const raw = (m[2] ?? '').trim();
    charsets.push((raw.startsWith('"') ? raw.slice(1, -1).replace(/\\(.)/g, '$1') : raw).toLowerCase());
  }
  return charsets;
}

/**
 * A Content-Type's parameters as RFC 9110 §5.6.6 writes them: `*( OWS ";" OWS [ token "=" ( token / quoted-string ) ] )`.
 * Fastify passed over a parameter it could not read, and the charset check read `charset=` as the charset "":
 * `application/json; charset=` was a 415 `Unsupported charset ""` (saying nothing of what was wrong), while
 * `application/json; utf-8` (no name) and `application/json; charset="utf-8` (no closing quote) were read as JSON.
 * Any of them is a 415 saying what to send, on every service.
 */
const TOKEN = "[!#$%&'*+.^_`|~0-9A-Za-z-]+";
const QUOTED_STRING = '"(?:[\\t \\x21\\x23-\\x5b\\x5d-\\x7e\\x80-\\xff]|\\\\[\\t \\x21-\\x7e\\x80-\\xff])*"';
const PARAMETERS = new RegExp(`^(?:[ \\t]*;[ \\t]*(?:${TOKEN}=(?:${TOKEN}|${QUOTED_STRING}))?)*[ \\t]*$`);

function clientError(statusCode: number, message: string): Error & { statusCode: number } {
  return Object.assign(new Error(message), { statusCode });
}

/** The 415 for a Content-Type whose parameters are not `; name=value` pairs; undefined when they are (or there are none). */
export function contentTypeParametersError(contentType: string | undefined): (Error & { statusCode: number }) | undefined {
  const type = contentType ?? '';
  const semicolon = type.indexOf(';');
  if (semicolon < 0 || PARAMETERS.test(type.slice(semicolon))) return undefined;
  return clientError(
    415,
    `Content-Type ${JSON.stringify(type.slice(0, 100))} is malformed: each parameter after ";" must be name=value, the value not empty (such as charset=utf-8); send Content-Type: application/json`,
  );
}

export function installJsonBodyParser(app: FastifyInstance, opts: { onProtoPoisoning: 'remove'; onConstructorPoisoning: 'remove' }): void {
  const parseJson = app.getDefaultJsonParser(opts.onProtoPoisoning, opts.onConstructorPoisoning);
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body, done) => {
    const malformed = contentTypeParametersError(request.headers['content-type']);
    if (malformed) return done(malformed, undefined);
    // every charset named must be UTF-8 (given twice, both must be), whatever their order
    const charset = charsetsOf(request.headers['content-type']).find((c) => c !== 'utf-8' && c !== 'utf8');
    if (charset !== undefined) {
      return done(clientError(415, `Unsupported charset "${charset.slice(0, 40)}": send the JSON body as UTF-8 (charset=utf-8, or no charset)`), undefined);
    }
    let text: string;
    try {
      text = UTF8.decode(body as Buffer);
    } catch {
      return done(clientError(400, 'Request body is not valid UTF-8: JSON must be sent as UTF-8'), undefined);
    }
    parseJson(request, text, (err, parsed) => {
      const path = err ? undefined : underflowingNumberPath(text);
      if (path === undefined) return done(err, parsed);
      const label = path || 'body';
      done(validationError(`Request body is invalid: ${label} ${UNDERFLOW_MESSAGE}`, { [label]: UNDERFLOW_MESSAGE }), undefined);
    });
  });
}
