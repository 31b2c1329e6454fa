/**
 * The message to record for a failure caught in a workflow: Temporal wraps what really went wrong
 * (ActivityFailure → ApplicationFailure, ChildWorkflowFailure → …), so the innermost cause says it best.
 * Pure and deterministic; the one cause-unwrapping helper of workflows/.
 */
export function failureMessage(err: unknown): string {
  let e: unknown = err;
  while (e instanceof Error && e.cause instanceof Error) e = e.cause;
  if (e instanceof Error) return e.message;
  const m = (e as { message?: unknown } | null)?.message;
  return typeof m === 'string' ? m : String(e);
}
