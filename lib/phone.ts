/**
 * Phone numbers of message traces: E.164-like input in the usual written forms (`+1 (555) 010-2000`,
 * `0015550102000`, `15550102000`) normalised to `+<country code><number>`, 7 to 15 digits, no leading zero.
 */

const SEPARATORS = /[\s\-.()/]/g;
const E164 = /^\+[1-9]\d{6,14}$/;

/** The normalised form, or undefined when the input is not an E.164-like phone number. */
export function normalisePhone(input: string): string | undefined {
  if (input.length > 40) return undefined;
  const compact = input.trim().replace(SEPARATORS, '');
  let digits: string;
  if (compact.startsWith('+')) digits = compact.slice(1);
  else if (compact.startsWith('00')) digits = compact.slice(2); // international call prefix
  else digits = compact; // bare digits: taken as already carrying the country code
  if (!/^\d+$/.test(digits)) return undefined;
  const normalised = `+${digits}`;
  return E164.test(normalised) ? normalised : undefined;
}

const SEP = '[\\s.()/-]';
/**
 * The same rule as a regular expression (JSON Schema `pattern`, for the request schemas and so the documents): a
 * string matches exactly when `normalisePhone` (within 40 characters) accepts it.
 */
export const PHONE_PATTERN = `^${SEP}*(?:\\+${SEP}*|0${SEP}*0${SEP}*)?[1-9](?:${SEP}*[0-9]){6,14}${SEP}*$`;

export const isNormalisedPhone = (s: string): boolean => E164.test(s);
