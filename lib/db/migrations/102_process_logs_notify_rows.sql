-- The log notification carries the new rows themselves when they fit, so an API process hands them to its followers
-- without reading them back (lib/events/logFeed.ts). Per process written by the statement: {p, a, s} as before (the
-- process, its attempt, the new high-water mark) and `r`, its rows in seq order from the first one written, as far as
-- they fit in about 6,000 bytes: [seq, level, message, source, raw or null when equal to the message, metadata or null
-- when empty, ts in epoch milliseconds]. Rows past that budget (a burst, a long line) are left out of `r`, and a
-- payload that would pass PostgreSQL's 8,000-byte limit after all (JSON escapes, metadata) is sent without `r`: the
-- API reads what `r` does not hold by seq range, as before.
CREATE OR REPLACE FUNCTION process_logs_notify() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  r record;
  payload text;
BEGIN
  FOR r IN
    SELECT x.process_id, min(x.attempt_id) AS attempt_id, max(x.seq) AS seq,
           json_agg(json_build_array(x.seq, x.level, x.message, x.source, NULLIF(x.raw, x.message), NULLIF(x.metadata, '{}'::jsonb),
                                     floor(extract(epoch FROM x.ts) * 1000)) ORDER BY x.seq) FILTER (WHERE x.fits) AS rows
      FROM (SELECT n.process_id, n.attempt_id, n.seq, n.level, n.message, n.source, n.raw, n.metadata, n.ts,
                   sum(octet_length(n.message) + octet_length(n.raw) + pg_column_size(n.metadata) + 48)
                     OVER (PARTITION BY n.process_id ORDER BY n.seq) <= 6000 AS fits
              FROM new_rows n) x
     GROUP BY x.process_id
  LOOP
    payload := json_build_object('p', r.process_id, 'a', r.attempt_id, 's', r.seq, 'r', r.rows)::text;
    IF octet_length(payload) >= 8000 THEN
      payload := json_build_object('p', r.process_id, 'a', r.attempt_id, 's', r.seq)::text;
    END IF;
    PERFORM pg_notify('armada_logs', payload);
  END LOOP;
  RETURN NULL;
END $$;
