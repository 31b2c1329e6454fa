/** Routes the Temporal SDK's own log lines into pino (so they share format, level and redaction). */
import type { LogLevel, LogMetadata, Logger as SdkLogger } from '@temporalio/common';
import type { Logger } from '../logger';

/**
 * The SDK passes failures as `error` (e.g. `Activity failed` with `{ error, durationMs }`); an Error has no enumerable
 * properties, so pino wrote `"error":{}`. Under `err` pino's error serializer keeps its type, message and stack.
 */
function withErr(meta: LogMetadata | undefined): LogMetadata {
  if (!meta || !(meta.error instanceof Error)) return meta ?? {};
  const { error, ...rest } = meta;
  return { ...rest, err: error };
}

export function sdkLogger(logger: Logger): SdkLogger {
  const log = logger.child({ component: 'temporal-sdk' });
  const at = (level: LogLevel, message: string, meta?: LogMetadata) => {
    const fn = { TRACE: log.trace, DEBUG: log.debug, INFO: log.debug, WARN: log.warn, ERROR: log.error }[level] ?? log.info;
    fn.call(log, withErr(meta), message);
  };
  return {
    log: at,
    trace: (m, meta) => at('TRACE', m, meta),
    debug: (m, meta) => at('DEBUG', m, meta),
    info: (m, meta) => at('INFO', m, meta),
    warn: (m, meta) => at('WARN', m, meta),
    error: (m, meta) => at('ERROR', m, meta),
  };
}
