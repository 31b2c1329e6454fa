-- A task's detail also shows its attempts and its project's repository: every committed change to attempts or
-- projects sends one NOTIFY on armada_task_details_changed, so the task service's detail cache drops its entries
-- (lib/events/invalidatingCache.ts). Statement-level, folded by PostgreSQL within a transaction.
CREATE FUNCTION task_details_changed_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('armada_task_details_changed', '');
  RETURN NULL;
END $$;

CREATE TRIGGER attempts_changed_notify AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON attempts
  FOR EACH STATEMENT EXECUTE FUNCTION task_details_changed_notify();
CREATE TRIGGER projects_changed_notify AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON projects
  FOR EACH STATEMENT EXECUTE FUNCTION task_details_changed_notify();
