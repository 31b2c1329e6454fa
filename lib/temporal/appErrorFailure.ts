/**
 * An AppError across Temporal: an activity that fails for good with an error the client can act on sends it as a
 * non-retryable ApplicationFailure (type = the code, details = the status and the error's details), and the API finds
 * it again in the failed workflow's causes and answers with it, not with a 500.
 */
import { ApplicationFailure } from '@temporalio/common';
import { AppError } from '../errors';

interface AppErrorDetails {
  statusCode?: unknown;
  details?: unknown;
}

/** The non-retryable failure that carries `err` to the API. */
export function appErrorFailure(err: AppError): ApplicationFailure {
  return ApplicationFailure.create({ type: err.code, message: err.message, nonRetryable: true, details: [{ statusCode: err.statusCode, details: err.details }] });
}

/** The AppError an activity failed with for good (sent by appErrorFailure), from a failed workflow's causes. */
export function appErrorOfFailure(err: unknown): AppError | undefined {
  for (let e: unknown = err; e instanceof Error; e = e.cause) {
    if (!(e instanceof ApplicationFailure) || !e.type) continue;
    const d = e.details?.[0] as AppErrorDetails | undefined;
    if (typeof d?.statusCode !== 'number') continue;
    const details = d.details && typeof d.details === 'object' ? (d.details as Record<string, unknown>) : undefined;
    return new AppError(d.statusCode, e.type, e.message, details);
  }
  return undefined;
}
