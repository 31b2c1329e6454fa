-- Each webhook's receiver as the deliveries have found it: the breaker of activities/webhooks.ts. After
-- webhooks.openAfterFailures consecutive failed tries (5xx, 408, 429, timeouts, connection errors) the breaker is open:
-- the webhook's deliveries send nothing and wait for probe_at, when exactly one of them (the one whose conditional
-- UPDATE set probe_holder) tries the receiver. Its answer closes the breaker or moves probe_at out (probe_interval_ms
-- doubles up to webhooks.backoffMaxMs). The probe is leased until probe_lease_until, so the probe of a worker that was
-- killed mid-try is taken by another delivery after the lease. A table of its own, not columns of webhooks: a change
-- to webhooks sends armada_webhooks_changed (migration 080), which would start a dispatch pass on every try.
CREATE TABLE IF NOT EXISTS webhook_receivers (
  webhook_id            text PRIMARY KEY REFERENCES webhooks (id) ON DELETE CASCADE,
  consecutive_failures  integer NOT NULL DEFAULT 0,
  failing_since         timestamptz,
  probe_at              timestamptz,
  probe_interval_ms     integer NOT NULL DEFAULT 0,
  probe_holder          text,
  probe_lease_until     timestamptz
);

-- Which tries of the delivery log were an open breaker's probes: they try the receiver for all the webhook's deliveries
-- and do not count towards a delivery's webhooks.maxTries (a receiver down as a whole is bounded by retryForMs).
ALTER TABLE webhook_deliveries ADD COLUMN IF NOT EXISTS probe boolean NOT NULL DEFAULT false;
