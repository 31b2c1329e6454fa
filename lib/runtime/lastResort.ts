/**
 * The last resort for an exception no code caught (thrown in an event handler or a timer, a promise rejected with no
 * handler). Node's default ends the process at once with a stack trace on stderr; for `armada start` that left its
 * embedded PostgreSQL and Temporal dev server running without their parent. Here the process still ends (going on
 * after such an exception is not safe) but in order: one fatal log line with the error, the same shutdown as Ctrl-C
 * within `limitMs`, and exit code 70 (EX_SOFTWARE). A second such exception during that shutdown exits at once.
 */
import type { Logger } from '../logger';

export const LAST_RESORT_EXIT_CODE = 70;

export function installLastResort(logger: Pick<Logger, 'fatal'>, shutdown: () => Promise<unknown>, limitMs = 30_000): () => void {
  let ending = false;
  const end = (kind: 'uncaught exception' | 'unhandled rejection') => (err: unknown) => {
    const e = err instanceof Error ? { type: err.name, message: err.message, stack: err.stack } : { message: String(err) };
    if (ending) {
      logger.fatal({ err: e }, `${kind} while stopping after an earlier one: exiting now`);
      process.exit(LAST_RESORT_EXIT_CODE);
    }
    ending = true;
    logger.fatal({ err: e }, `${kind}: stopping everything (a bug in Armada; please report it with this line)`);
    process.exitCode = LAST_RESORT_EXIT_CODE;
    setTimeout(() => process.exit(LAST_RESORT_EXIT_CODE), limitMs).unref();
    Promise.resolve()
      .then(shutdown)
      .catch(() => undefined)
      .finally(() => process.exit(LAST_RESORT_EXIT_CODE));
  };
  const onException = end('uncaught exception');
  const onRejection = end('unhandled rejection');
  process.on('uncaughtException', onException);
  process.on('unhandledRejection', onRejection);
  return () => {
    process.off('uncaughtException', onException);
    process.off('unhandledRejection', onRejection);
  };
}
