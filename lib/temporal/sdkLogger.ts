/** Routes the Temporal SDK's own log lines into pino (so they share format, level and redaction). */
import type { LogLevel, LogMetadata, Logger as SdkLogger } from '@temporalio/common';
import type { Logger } from '../logger';

export function sdkLogger(logger: Logger): SdkLogger {
  const log = logger.child({ component: 'temporal-sdk' });
  const at = (level: LogLevel, message: string, meta?: LogMetadata) => {
    const fn = { TRACE: log.trace, DEBUG: log.debug, INFO: log.debug, WARN: log.warn, ERROR: log.error }[level] ?? log.info;
    fn.call(log, meta ?? {}, message);
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
