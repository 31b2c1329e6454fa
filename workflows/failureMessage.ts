/** What a failure caught in a workflow says: pure and deterministic; the cause-unwrapping helpers of workflows/. */
import { EXECUTION_STOPPED } from '../lib/scheduler/taskStop';

/**
 * The message to record for a failure caught in a workflow: Temporal wraps what really went wrong
 * (ActivityFailure → ApplicationFailure, ChildWorkflowFailure → …), so the innermost cause says it best.
 */
export function failureMessage(err: unknown): string {
  let e: unknown = err;
  while (e instanceof Error && e.cause instanceof Error) e = e.cause;
  if (e instanceof Error) return e.message;
  const m = (e as { message?: unknown } | null)?.message;
  return typeof m === 'string' ? m : String(e);
}

/**
 * Whether a task's try ended because its execution was stopped (POST …/stop, or its workflow deleted), as the try read
 * it in PostgreSQL before Temporal's cancellation reached it (activities/scheduler/taskStop.ts): a non-retryable
 * failure of type EXECUTION_STOPPED, which the run records like a cancellation.
 */
export function stoppedByRequest(err: unknown): boolean {
  for (let e: unknown = err; e instanceof Error; e = e.cause) {
    if ((e as { type?: unknown }).type === EXECUTION_STOPPED) return true;
  }
  return false;
}
