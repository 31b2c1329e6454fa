-- A start commits the attempt first and starts its workflow after the commit (docs/attempts.md, "Starting an
-- attempt"). start_pending_since is set from that commit until the workflow start is confirmed, when attempt.started
-- is published: a failed start removes the attempt (or returns a created one to `created`), and the task API's start
-- reconciler finishes starts left pending by a process that died in between.
ALTER TABLE attempts ADD COLUMN start_pending_since timestamptz;
CREATE INDEX attempts_start_pending_idx ON attempts (start_pending_since) WHERE start_pending_since IS NOT NULL;
