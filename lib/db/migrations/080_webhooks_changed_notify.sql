-- Every committed change to webhooks sends one NOTIFY on armada_webhooks_changed, so a webhook dispatcher that knows
-- no webhook is active (and so skips the dispatch pass it would run on each event) reads the subscriptions again.
CREATE FUNCTION webhooks_changed_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('armada_webhooks_changed', '');
  RETURN NULL;
END $$;

CREATE TRIGGER webhooks_changed_notify AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON webhooks
  FOR EACH STATEMENT EXECUTE FUNCTION webhooks_changed_notify();
