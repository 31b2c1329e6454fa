/**
 * SQL for agent_memory: the multi-agent service's shared memory, searched with PostgreSQL full-text search.
 * A query matches entries holding ANY of its words (its lexemes joined into an OR query).
 * relevance (0..1) = the share of the query's words the entry holds × its ts_rank_cd relative to the best match of
 * the query: the best entry holding every word scores 1 (an exact single hit is 1, not ts_rank_cd's 0.1), an entry
 * holding one of three words at most 1/3.
 */
import type { Queryable } from './pool';

export interface MemoryRow {
  id: string;
  content: string;
  agent: string | null;
  metadata: Record<string, unknown>;
  created_at: Date;
}

export interface MemoryHit extends MemoryRow {
  relevance: number;
}

export async function insertMemory(db: Queryable, m: { id: string; content: string; agent: string | null; metadata: Record<string, unknown> }): Promise<MemoryRow> {
  const { rows } = await db.query<MemoryRow>(
    'INSERT INTO agent_memory (id, content, agent, metadata) VALUES ($1, $2, $3, $4) RETURNING id, content, agent, metadata, created_at',
    [m.id, m.content, m.agent, m.metadata],
  );
  return rows[0] as MemoryRow;
}

// "Any word": the query's lexemes (plainto_tsquery's: same parser, stemming and stop words) joined with |, each quoted
// as tsquery input wants ('' and \\ escaped). Replacing plainto_tsquery's & by | also changed the lexemes that hold
// an & (a URL's query string): `x.com/p?q=1&r=2` searched for `x.com/p?q=1|r=2`, and an entry holding the URL ranked
// below one that repeats its host.
// The query's words are those of its NFC form, as the stored tsvector is made of the content's (migration 107): a
// term typed decomposed (e + U+0301) finds an entry written composed (é), and the reverse.
const QUERY_WORDS = `tsvector_to_array(to_tsvector('english', normalize($1, NFC)))`;
const QUERY = `array_to_string(ARRAY(SELECT '''' || replace(replace(w, '\\', '\\\\'), '''', '''''') || '''' FROM unnest(${QUERY_WORDS}) AS w), ' | ')::tsquery`;

/** Best matches first (ties: newest first); total counts every match of the query and filter. */
export async function searchMemory(db: Queryable, q: string, opts: { agent?: string; limit: number; offset?: number }): Promise<{ hits: MemoryHit[]; total: number }> {
  const params: unknown[] = [q];
  let agentClause = '';
  if (opts.agent !== undefined) {
    params.push(opts.agent);
    agentClause = `AND agent = $${params.length}`;
  }
  const { rows } = await db.query<MemoryHit & { total: number }>(
    `WITH query AS (SELECT ${QUERY} AS q, ${QUERY_WORDS} AS words),
     hits AS (
       SELECT m.id, m.content, m.agent, m.metadata, m.created_at,
              ts_rank_cd(m.search, query.q)::float8 AS rank,
              cardinality(ARRAY(SELECT unnest(query.words) INTERSECT SELECT unnest(tsvector_to_array(m.search))))::float8
                / GREATEST(cardinality(query.words), 1) AS coverage
         FROM agent_memory m, query
        WHERE m.search @@ query.q ${agentClause}
     )
     SELECT id, content, agent, metadata, created_at,
            LEAST(1, COALESCE(coverage * rank / NULLIF(max(rank) OVER (), 0), coverage))::float8 AS relevance,
            count(*) OVER ()::int AS total
       FROM hits
      ORDER BY relevance DESC, created_at DESC, id
      LIMIT $${params.length + 1} OFFSET $${params.length + 2}`,
    [...params, opts.limit, opts.offset ?? 0],
  );
  let total = rows[0]?.total ?? 0;
  if (rows.length === 0 && (opts.offset ?? 0) > 0) {
    const c = await db.query<{ n: number }>(`WITH query AS (SELECT ${QUERY} AS q) SELECT count(*)::int AS n FROM agent_memory m, query WHERE m.search @@ query.q ${agentClause}`, params);
    total = c.rows[0]?.n ?? 0;
  }
  return { hits: rows.map(({ total: _t, ...hit }) => hit), total };
}

export interface MemoryStats {
  totalEntries: number;
  byAgent: Record<string, number>;
  sharedEntries: number;
  storageBytes: number;
}

/** The byAgent key of entries stored without an agent (agent names cannot hold parentheses, so it never clashes). */
export const SHARED_AGENT_KEY = '(shared)';

/**
 * Counts per agent, entries without an agent under SHARED_AGENT_KEY (so Σ byAgent = totalEntries) and also as
 * `sharedEntries`, and the table's on-disk size incl. indexes and TOAST.
 */
export async function memoryStats(db: Queryable): Promise<MemoryStats> {
  const { rows } = await db.query<{ agent: string | null; n: number }>('SELECT agent, count(*)::int AS n FROM agent_memory GROUP BY agent ORDER BY agent');
  const size = await db.query<{ bytes: string }>("SELECT pg_total_relation_size('agent_memory')::text AS bytes");
  const totalEntries = rows.reduce((sum, r) => sum + r.n, 0);
  const sharedEntries = rows.find((r) => r.agent === null)?.n ?? 0;
  // own properties whatever the name: `byAgent[name] = n` set the prototype for an agent named __proto__ (the
  // pattern of names allows it), whose entries then were in totalEntries and in no key of byAgent
  const byAgent: Record<string, number> = Object.fromEntries([
    ...rows.flatMap((r) => (r.agent === null ? [] : [[r.agent, r.n] as const])),
    ...(sharedEntries > 0 ? [[SHARED_AGENT_KEY, sharedEntries] as const] : []),
  ]);
  return { totalEntries, byAgent, sharedEntries, storageBytes: Number(size.rows[0]?.bytes ?? 0) };
}
