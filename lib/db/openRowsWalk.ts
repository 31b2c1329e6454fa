/**
 * The closed-workflow reconciler's walk over the rows it checks against Temporal (attempts still `running`,
 * approvals still `pending`): a bounded page per pass, going on from where the last pass stopped
 * (api/task/closedWorkflowReconciler.ts, docs/attempts.md "Closed-workflow reconciler").
 */
import type { Queryable } from './pool';

/** Open rows a reconciler's pass checks at most: its work is bounded, and the next pass goes on from there. */
export const OPEN_ROWS_PER_PASS = 500;

/**
 * Where a closed-workflow reconciler's walk over its open rows (in `created_at`, `id` order) stands between passes:
 * after `after` (`created_at` as PostgreSQL's text, microseconds kept); unset, from the first. Back to the first after a pass that reached the last.
 */
export interface OpenRowsWalk {
  after?: { createdAt: string; id: string };
}

/**
 * The next page of at most `limit` open rows (`table`'s rows matching `open`, created more than `closedForMs` ago: a
 * workflow closed that long ago was started before) after `walk`, and moves `walk` on (back to the start after the
 * last page).
 */
export async function nextOpenRows(
  db: Queryable,
  table: 'attempts' | 'approvals',
  open: string,
  closedForMs: number,
  walk: OpenRowsWalk,
  limit = OPEN_ROWS_PER_PASS,
): Promise<string[]> {
  const { rows } = await db.query<{ id: string; created_at: string }>(
    `SELECT id, created_at::text AS created_at FROM ${table}
      WHERE ${open} AND created_at < now() - $1::double precision * interval '1 millisecond'
        AND ($2::timestamptz IS NULL OR (created_at, id) > ($2::timestamptz, $3::text))
      ORDER BY created_at, id LIMIT $4`,
    [closedForMs, walk.after?.createdAt ?? null, walk.after?.id ?? '', limit],
  );
  const last = rows.at(-1);
  walk.after = rows.length < limit || !last ? undefined : { createdAt: last.created_at, id: last.id };
  return rows.map((r) => r.id);
}
