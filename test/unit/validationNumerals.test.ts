/**
 * The numerals a query, path or header string may be written in to be read as a number (api/http/validation.ts,
 * NUMERAL): plain decimal for `integer` and `number` alike, a `number` with a fraction but never an exponent, as the
 * OpenAPI documents' input policy says. Run through the validator compiler the services use, on the parts it coerces.
 */
import { validatorCompiler } from '../../api/http/validation';

const schema = { type: 'object', properties: { ratio: { type: 'number' }, count: { type: 'integer' }, ratios: { type: 'array', items: { type: 'number' } } } };

/** The value read from `{[name]: text}` in `part`, or the error message when it is refused. */
function read(part: 'querystring' | 'params' | 'headers', name: string, text: string | string[]): unknown {
  const validate = validatorCompiler({ schema, httpPart: part, method: 'GET', url: '/x' }) as ((data: unknown) => boolean) & { errors?: { message?: string }[] | null };
  const data: Record<string, unknown> = { [name]: text };
  return validate(data) ? data[name] : `refused: ${validate.errors?.[0]?.message}`;
}

describe('a number written in a query, path or header string', () => {
  test.each(['querystring', 'params', 'headers'] as const)('%s: a plain decimal numeral is read, with a fraction for a number', (part) => {
    expect(read(part, 'ratio', '1.5')).toBe(1.5);
    expect(read(part, 'ratio', '-0.25')).toBe(-0.25);
    expect(read(part, 'ratio', '3')).toBe(3);
    expect(read(part, 'count', '42')).toBe(42);
  });

  test.each(['querystring', 'params', 'headers'] as const)('%s: an exponent, a sign, a bare point, hex or blanks are refused for a number as for an integer', (part) => {
    for (const text of ['1e3', '1E3', '1.5e-2', '2e+1', '+1', '.5', '5.', '0x10', ' 1', '1 ', 'Infinity', 'NaN', '1_000', '١']) {
      expect([text, read(part, 'ratio', text)]).toEqual([text, 'refused: must be number']);
      expect([text, read(part, 'count', text)]).toEqual([text, 'refused: must be integer']);
    }
    expect(read(part, 'count', '1.5')).toBe('refused: must be integer');
  });

  test('array items of a query parameter follow the same rule', () => {
    expect(read('querystring', 'ratios', ['0.5', '2'])).toEqual([0.5, 2]);
    expect(read('querystring', 'ratios', ['0.5', '1e3'])).toBe('refused: must be number');
  });
});
