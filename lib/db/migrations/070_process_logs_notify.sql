-- Live logs are pushed, not polled: every statement that appends log rows sends one NOTIFY on armada_logs per
-- process it wrote to, carrying the process, its attempt and the new high-water mark (the highest seq written).
-- API processes hear it on their one LISTEN connection (lib/events/logFeed.ts) and read the new rows by seq range.
-- Statement-level with a transition table, so a multi-row insert costs one notification per process, not per row.
CREATE FUNCTION process_logs_notify() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  r record;
BEGIN
  FOR r IN SELECT process_id, min(attempt_id) AS attempt_id, max(seq) AS seq FROM new_rows GROUP BY process_id LOOP
    PERFORM pg_notify('armada_logs', json_build_object('p', r.process_id, 'a', r.attempt_id, 's', r.seq)::text);
  END LOOP;
  RETURN NULL;
END $$;

CREATE TRIGGER process_logs_notify AFTER INSERT ON process_logs
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION process_logs_notify();
