-- Multi-agent service (C): the shared memory. Searched with PostgreSQL full-text search (english configuration)
-- over a stored tsvector with a GIN index; agent is NULL for entries shared by nobody in particular.
CREATE TABLE agent_memory (
  id          text PRIMARY KEY,
  content     text NOT NULL,
  agent       text,
  metadata    jsonb NOT NULL DEFAULT '{}'::jsonb,
  created_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
  search      tsvector GENERATED ALWAYS AS (to_tsvector('english', content)) STORED
);
CREATE INDEX agent_memory_search_idx ON agent_memory USING gin (search);
CREATE INDEX agent_memory_agent_idx ON agent_memory (agent, created_at DESC);
