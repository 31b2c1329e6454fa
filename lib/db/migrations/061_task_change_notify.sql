-- Every committed change to tasks (API, workers, cascades from project deletes, plain SQL) sends one NOTIFY on
-- armada_tasks_changed, so the task service's list-page cache (lib/events/invalidatingCache.ts) can drop its pages.
-- Statement-level: one notification per statement, and PostgreSQL folds identical ones within a transaction.
CREATE FUNCTION tasks_changed_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('armada_tasks_changed', '');
  RETURN NULL;
END $$;

CREATE TRIGGER tasks_changed_notify AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON tasks
  FOR EACH STATEMENT EXECUTE FUNCTION tasks_changed_notify();
