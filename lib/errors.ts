/** Domain errors: values with an HTTP status, a stable code and optional per-field details. Route handlers throw these. */
export class AppError extends Error {
  constructor(
    readonly statusCode: number,
    readonly code: string,
    message: string,
    readonly details?: Record<string, unknown>,
  ) {
    super(message);
    this.name = 'AppError';
  }
}

export const notFound = (message: string, code = 'NOT_FOUND'): AppError => new AppError(404, code, message);
export const conflict = (message: string, code = 'CONFLICT', details?: Record<string, unknown>): AppError =>
  new AppError(409, code, message, details);
export const validationError = (message: string, details?: Record<string, string>): AppError =>
  new AppError(400, 'VALIDATION_ERROR', message, details);
export const invalidRequest = (message: string, details?: Record<string, string>): AppError =>
  new AppError(400, 'INVALID_REQUEST', message, details);
export const forbidden = (message: string): AppError => new AppError(403, 'FORBIDDEN', message);
/** A WebSocket endpoint asked without `Upgrade: websocket`. */
export const upgradeRequired = (message: string): AppError => new AppError(426, 'UPGRADE_REQUIRED', message);
export const unauthorized = (message = 'Authentication required'): AppError => new AppError(401, 'UNAUTHORIZED', message);

export function isAppError(err: unknown): err is AppError {
  return err instanceof AppError;
}

/**
 * A failure the operator fixes outside Armada (a missing binary, a bad setting, a home another process holds): its
 * message is the whole story, one line naming what to do, and the CLI prints it as `armada: <message>` with exit 1.
 * The CLI tells these apart by this class alone, so it needs none of the heavy modules that throw them to do so.
 */
export class OperatorError extends Error {}

/** A setting (variable, config file, flag) Armada cannot use; the message names it and what it accepts. */
export class ConfigError extends OperatorError {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}
