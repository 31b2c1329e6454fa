/**
 * The one place Temporal client errors become HTTP errors: an update refused by its validator carries the reason as
 * the ApplicationFailure type (FORBIDDEN → 403, CONFLICT → 409, NOT_FOUND → 404, anything else → 422);
 * an id already running → 409; a workflow that is gone → the caller's choice (default 404).
 */
import { ApplicationFailure } from '@temporalio/common';
import { WorkflowExecutionAlreadyStartedError, WorkflowNotFoundError, WorkflowUpdateFailedError } from '@temporalio/client';
import { AppError, conflict, forbidden, notFound } from '../../lib/errors';

export interface TemporalErrorOptions {
  /** What a missing (or already closed) workflow means for this route; default 404. */
  whenGone?: () => AppError | Promise<AppError>;
}

export async function temporalToAppError(err: unknown, opts: TemporalErrorOptions = {}): Promise<unknown> {
  if (err instanceof WorkflowUpdateFailedError) {
    const cause = err.cause;
    const message = cause instanceof Error ? cause.message : err.message;
    const type = cause instanceof ApplicationFailure ? cause.type : undefined;
    if (type === 'FORBIDDEN') return forbidden(message);
    if (type === 'CONFLICT') return conflict(message);
    if (type === 'NOT_FOUND') return notFound(message);
    return new AppError(422, 'UNPROCESSABLE', message);
  }
  if (err instanceof WorkflowExecutionAlreadyStartedError) return conflict(`Workflow ${err.workflowId} is already running`);
  if (err instanceof WorkflowNotFoundError) return opts.whenGone ? opts.whenGone() : notFound(err.message);
  return err;
}

/** Runs a Temporal client call and rethrows its errors as AppErrors (see temporalToAppError). */
export async function callTemporal<T>(fn: () => Promise<T>, opts: TemporalErrorOptions = {}): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    throw await temporalToAppError(err, opts);
  }
}
