/**
 * `fn` over `items`, at most `limit` at a time, started in the items' order. When one fails, no further item starts;
 * the ones already running are waited for, then the first failure is thrown (as a loop of awaits would have thrown
 * it, with the items after it never started).
 */
export async function eachLimit<T>(items: readonly T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  let failure: { err: unknown } | undefined;
  const lane = async (): Promise<void> => {
    while (!failure && next < items.length) {
      const item = items[next++] as T;
      try {
        await fn(item);
      } catch (err) {
        failure ??= { err };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, lane));
  if (failure) throw failure.err;
}
