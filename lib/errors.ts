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
