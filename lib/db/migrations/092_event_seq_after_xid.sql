-- An event's seq is taken after its transaction has an id. A follower of the events table that sees seq 11 committed
-- while 10 is not yet takes the next transaction id as a horizon: once no transaction id below it is running
-- (pg_snapshot_xmin), 10 has committed or never will (lib/events/eventGaps.ts). With the bigserial default the
-- insert took the seq first and got its transaction id a moment later, so the holder of 10 could still be without an
-- id, and above the horizon, when the horizon was taken.
CREATE FUNCTION next_event_seq() RETURNS bigint LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  PERFORM pg_current_xact_id();
  RETURN nextval('events_seq_seq');
END $$;

ALTER TABLE events ALTER COLUMN seq SET DEFAULT next_event_seq();
