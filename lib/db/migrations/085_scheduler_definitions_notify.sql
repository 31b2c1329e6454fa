-- Every committed change to what a scheduled run reads before its first request leaves (the workflow's tasks, the
-- default schedule's row, a source's address, key, type, name and status) sends a NOTIFY on
-- armada_scheduler_definitions, so the worker's definition cache (beginRun, docs/scheduler.md#definition-cache)
-- drops what it holds. One notification per changed row (PostgreSQL folds identical ones within a transaction); a
-- source's health-check bookkeeping (last_health_*, version_info) and a one-time schedule's ran_at do not count.
CREATE FUNCTION scheduler_definitions_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('armada_scheduler_definitions', TG_TABLE_NAME);
  RETURN NULL;
END $$;

CREATE TRIGGER scheduler_workflows_definitions_notify AFTER INSERT OR UPDATE OR DELETE ON scheduler_workflows
  FOR EACH ROW EXECUTE FUNCTION scheduler_definitions_notify();
CREATE TRIGGER scheduler_workflows_definitions_truncate AFTER TRUNCATE ON scheduler_workflows
  FOR EACH STATEMENT EXECUTE FUNCTION scheduler_definitions_notify();

CREATE TRIGGER scheduler_sources_definitions_notify AFTER INSERT OR DELETE ON scheduler_sources
  FOR EACH ROW EXECUTE FUNCTION scheduler_definitions_notify();
CREATE TRIGGER scheduler_sources_definitions_update AFTER UPDATE ON scheduler_sources
  FOR EACH ROW WHEN ((OLD.id, OLD.name, OLD.source_type, OLD.url, OLD.api_key_sealed, OLD.status)
                     IS DISTINCT FROM (NEW.id, NEW.name, NEW.source_type, NEW.url, NEW.api_key_sealed, NEW.status))
  EXECUTE FUNCTION scheduler_definitions_notify();
CREATE TRIGGER scheduler_sources_definitions_truncate AFTER TRUNCATE ON scheduler_sources
  FOR EACH STATEMENT EXECUTE FUNCTION scheduler_definitions_notify();

-- the default schedule is part of the workflow's row as the run reads it (lib/db/schedulerWorkflows.ts WORKFLOW_SELECT)
CREATE TRIGGER scheduler_schedules_definitions_notify AFTER INSERT OR DELETE ON scheduler_schedules
  FOR EACH ROW EXECUTE FUNCTION scheduler_definitions_notify();
CREATE TRIGGER scheduler_schedules_definitions_update AFTER UPDATE ON scheduler_schedules
  FOR EACH ROW WHEN ((OLD.id, OLD.workflow, OLD.is_default, OLD.cron, OLD.timezone, OLD.jitter_ms, OLD.enabled)
                     IS DISTINCT FROM (NEW.id, NEW.workflow, NEW.is_default, NEW.cron, NEW.timezone, NEW.jitter_ms, NEW.enabled))
  EXECUTE FUNCTION scheduler_definitions_notify();
CREATE TRIGGER scheduler_schedules_definitions_truncate AFTER TRUNCATE ON scheduler_schedules
  FOR EACH STATEMENT EXECUTE FUNCTION scheduler_definitions_notify();
