-- Shared memory search whichever Unicode form an entry and a query are written in: `café` typed composed (NFC, é)
-- and decomposed (NFD, e + U+0301, as macOS input and file names give it) are other words to to_tsvector, so an entry
-- stored in one form was not found by a query in the other. The stored tsvector is now made of the content's NFC form
-- (the search reads the query's NFC form the same way: lib/db/agentMemory.ts); the content itself is kept as written.
-- Dropping and adding the generated column computes it again for every row already stored (the table is rewritten
-- under an ACCESS EXCLUSIVE lock, as long as that takes for the table's size); the GIN index the search's @@ uses
-- goes with the old column and is made again on the new one.
ALTER TABLE agent_memory DROP COLUMN search;
ALTER TABLE agent_memory ADD COLUMN search tsvector GENERATED ALWAYS AS (to_tsvector('english', normalize(content, NFC))) STORED;
CREATE INDEX agent_memory_search_idx ON agent_memory USING gin (search);
