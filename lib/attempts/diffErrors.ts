/**
 * The errors of a diff read, one place for their codes: a diff that cannot be read is one of these for the reader
 * (a 500 the error handler logs, `event: error` on the live stream), never an empty or partial diff in its place.
 */
import { AppError } from '../errors';

/** The diff could not be read (not a matter of size): `what` failed, and why; a git result says why with its stderr. */
export function diffReadFailed(what: string, why: string | { code: number; stderr: string }): AppError {
  const detail = typeof why === 'string' ? why : why.stderr.trim() || `exit ${why.code}`;
  return new AppError(500, 'DIFF_READ_FAILED', `The attempt's diff could not be read: ${what} failed: ${detail}`);
}

/** The diff is past what one read carries even with the files it may omit listed without their lines. */
export function diffTooLarge(why: string): AppError {
  return new AppError(500, 'DIFF_TOO_LARGE', `The diff is too large to show: ${why}; ask for fewer files with ?file=`);
}
