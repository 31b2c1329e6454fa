/**
 * SQL for agent_roster (multi-agent service): the roster the agents-service replica started last had, by version,
 * and the agents it removed. Every value is a parameter.
 */
import type { Pool } from 'pg';
import { type Queryable, withTransaction } from './pool';

export interface PublishedRoster {
  /** The version of the roster the replica runs with (a new one when its agents differ from those listed). */
  version: number;
  /** The agents this version removed (by this replica, or by another that started with the same roster). */
  removed: string[];
}

/**
 * Publishes a replica's roster at its start. When its agents are those listed, it runs with the listed version;
 * otherwise it is the newest roster: a new version lists its agents (those removed before are listed again) and
 * removes the others. Waits for the starts and assignments that hold an agent's row (`agentRemovedIn` with lock).
 */
export async function publishRoster(pool: Pool, agents: readonly string[]): Promise<PublishedRoster> {
  return withTransaction(pool, async (c) => {
    await c.query('SELECT pg_advisory_xact_lock(hashtext($1))', ['agent_roster']); // one publisher at a time
    const { rows: listed } = await c.query<{ agent: string }>('SELECT agent FROM agent_roster WHERE NOT removed');
    const same = listed.length === agents.length && listed.every((r) => agents.includes(r.agent));
    if (!same) {
      const { rows } = await c.query<{ v: string }>("SELECT nextval('agent_roster_version_seq') AS v");
      const v = rows[0]?.v;
      await c.query(
        `INSERT INTO agent_roster (agent, roster_version) SELECT unnest($1::text[]), $2
           ON CONFLICT (agent) DO UPDATE SET roster_version = EXCLUDED.roster_version, removed = false, changed_at = clock_timestamp()
           WHERE agent_roster.removed`,
        [agents, v],
      );
      await c.query(
        'UPDATE agent_roster SET removed = true, roster_version = $2, changed_at = clock_timestamp() WHERE NOT removed AND agent <> ALL($1::text[])',
        [agents, v],
      );
    }
    const { rows } = await c.query<{ version: string; removed: string[] }>(
      `SELECT v.version, COALESCE(array_agg(r.agent ORDER BY r.agent) FILTER (WHERE r.agent IS NOT NULL), '{}') AS removed
         FROM (SELECT max(roster_version) AS version FROM agent_roster) v
         LEFT JOIN agent_roster r ON r.removed AND r.roster_version = v.version
        GROUP BY v.version`,
    );
    return { version: Number(rows[0]?.version ?? 0), removed: rows[0]?.removed ?? [] };
  });
}

const REMOVED_IN = 'SELECT removed, roster_version FROM agent_roster WHERE agent = $1';

/**
 * The roster version that removed the agent; undefined while it is listed (or was never published). With `lock`
 * (inside a transaction) the agent's row is held FOR SHARE until the transaction ends, so no newer roster removes the
 * agent meanwhile: what the transaction does for the agent (a start of its actor, an assignment) comes before a removal.
 */
export async function agentRemovedIn(db: Queryable, agent: string, opts: { lock?: boolean } = {}): Promise<number | undefined> {
  const { rows } = await db.query<{ removed: boolean; roster_version: string }>(opts.lock ? `${REMOVED_IN} FOR SHARE` : REMOVED_IN, [agent]);
  const row = rows[0];
  return row?.removed ? Number(row.roster_version) : undefined;
}

/** Which of `agents` a roster removed, with the version that did. */
export async function removedAgents(db: Queryable, agents: readonly string[]): Promise<Map<string, number>> {
  const { rows } = await db.query<{ agent: string; roster_version: string }>(
    'SELECT agent, roster_version FROM agent_roster WHERE removed AND agent = ANY($1::text[])',
    [agents],
  );
  return new Map(rows.map((r) => [r.agent, Number(r.roster_version)]));
}
