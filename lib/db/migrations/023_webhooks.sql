-- Outbound webhooks: registrations, the dispatcher's cursor over the events outbox, and the per-try delivery log.
CREATE TABLE webhooks (
  id          text PRIMARY KEY,
  url         text NOT NULL,
  events      text[] NOT NULL,
  -- sealed with the encryption key (lib/secretBox.ts); never returned by the API
  secret      text NOT NULL,
  active      boolean NOT NULL DEFAULT true,
  created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX webhooks_events_idx ON webhooks USING gin (events);

-- One row: the seq of the last events row the dispatcher has handed to Temporal. Replicas take it with
-- FOR UPDATE SKIP LOCKED, so only one of them dispatches at a time.
CREATE TABLE webhook_dispatch_cursor (
  id        smallint PRIMARY KEY CHECK (id = 1),
  last_seq  bigint NOT NULL
);
-- Webhooks start with the events committed after this migration; older history is not replayed.
INSERT INTO webhook_dispatch_cursor (id, last_seq) SELECT 1, COALESCE(max(seq), 0) FROM events;

CREATE TABLE webhook_deliveries (
  id           bigserial PRIMARY KEY,
  webhook_id   text NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
  event_seq    bigint NOT NULL,
  event_type   text NOT NULL,
  attempt      integer NOT NULL,
  status_code  integer,
  success      boolean NOT NULL,
  error        text,
  duration_ms  integer NOT NULL,
  created_at   timestamptz NOT NULL DEFAULT now(),
  UNIQUE (webhook_id, event_seq, attempt)
);
CREATE INDEX webhook_deliveries_webhook_idx ON webhook_deliveries (webhook_id, created_at DESC, id DESC);
