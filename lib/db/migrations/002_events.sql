-- Domain events: an append-only outbox. Every state change that clients may watch (streams, webhooks) inserts a row
-- here in the same transaction as the change; a NOTIFY on channel armada_events carries its seq to every API replica.
CREATE TABLE events (
  seq         bigserial PRIMARY KEY,
  type        text NOT NULL,
  -- what a subscriber filters on, e.g. 'task:<id>', 'process:<id>', 'project:<id>'
  topics      text[] NOT NULL DEFAULT '{}',
  data        jsonb NOT NULL DEFAULT '{}'::jsonb,
  created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX events_created_idx ON events (created_at);
CREATE INDEX events_topics_idx ON events USING gin (topics);
