/**
 * A request whose change the worker makes (a Temporal update or workflow whose activity writes PostgreSQL: an approval
 * response or cancel, a merge) and that waits for its result. The worker's activities wait for PostgreSQL through an
 * outage (activities/untilPostgresAnswers.ts), so such a request used to wait as long as the outage lasted (the chaos
 * soak: a merge answered 200 after 11 s, an approval response after 9.5 s, across a PostgreSQL kill). It is released
 * with a 503 the moment PostgreSQL is called down instead, as the requests waiting on PostgreSQL themselves are
 * (lib/db/releasedWhenDown.ts); what it asked for was handed on and may still be applied once PostgreSQL is back, so
 * the 503 says that the outcome is unknown.
 */
import { AppError } from '../../lib/errors';
import { POSTGRES_OUTCOME_UNKNOWN, settledOrDown } from '../../lib/db/releasedWhenDown';
import type { DependencyState } from '../../lib/runtime/dependencies';

export function releasedWhenPostgresDown<T>(dependencies: DependencyState | undefined, work: () => Promise<T>): Promise<T> {
  const pending = work();
  if (!dependencies) return pending;
  return settledOrDown(dependencies, pending, () => new AppError(503, 'SERVICE_UNAVAILABLE', POSTGRES_OUTCOME_UNKNOWN, { outcome: 'unknown' }));
}
