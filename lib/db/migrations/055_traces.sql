-- Message traces (service D): one row per message sent through a messaging instance, with its delivery receipts.
-- (instance, message_id) is the ingestion idempotency key; to_phone holds the normalised E.164 form (+<digits>).
CREATE TABLE traces (
  id              uuid PRIMARY KEY,
  message_id      text NOT NULL,
  instance        text NOT NULL,
  to_phone        text NOT NULL CHECK (to_phone ~ '^\+[1-9][0-9]{6,14}$'),
  message         text NOT NULL,
  status          text NOT NULL CHECK (status IN ('sent', 'delivered', 'read', 'failed')),
  sent_at         timestamptz NOT NULL,
  delivered_at    timestamptz,
  read_at         timestamptz,
  failed_at       timestamptz,
  payload_headers jsonb NOT NULL DEFAULT '{}'::jsonb,
  payload_body    jsonb NOT NULL DEFAULT '{}'::jsonb,
  created_at      timestamptz NOT NULL DEFAULT now(),
  updated_at      timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT traces_instance_message_key UNIQUE (instance, message_id),
  -- the forward-only rule keeps these consistent: read implies a delivery time, failed never coexists with receipts
  CONSTRAINT traces_status_times CHECK (
    (status <> 'read' OR (read_at IS NOT NULL AND delivered_at IS NOT NULL)) AND
    (status <> 'delivered' OR delivered_at IS NOT NULL) AND
    (status <> 'failed' OR (failed_at IS NOT NULL AND delivered_at IS NULL AND read_at IS NULL))
  )
);

-- The list filters (instance / phone, newest first) and the analytics window scan.
CREATE INDEX traces_instance_sent_idx ON traces (instance, sent_at DESC);
CREATE INDEX traces_to_sent_idx ON traces (to_phone, sent_at DESC);
CREATE INDEX traces_status_idx ON traces (status, sent_at DESC);
-- INCLUDE lets the analytics pass over the window be an index-only scan (no heap visits for fresh, vacuumed pages).
CREATE INDEX traces_sent_idx ON traces (sent_at DESC) INCLUDE (status, instance);
