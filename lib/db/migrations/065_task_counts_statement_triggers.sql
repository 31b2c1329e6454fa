-- task_counts (rows per project and status) kept by statement-level triggers with transition tables, so the cost of
-- a statement is linear in the rows it touches. The row-level triggers of 001 updated one counter row once per task:
-- within one transaction every such update adds a version of the same counter row that nothing can prune yet, and
-- each next update walks past all of them, so one INSERT … SELECT or UPDATE of n tasks cost O(n²).
--
-- Now each statement aggregates its transition tables per (project, status) and writes each counter row once.
-- Counter rows are always written in (project_id, status) order, so two statements touching the same counters lock
-- them in the same order and cannot deadlock on them. A single-row write locks the same one (insert, delete) or two
-- (status or project change) counter rows as before, and an update that changes neither locks none.
-- Transition tables need one trigger per event and no column list: the update trigger fires on every UPDATE of
-- tasks, and its deltas cancel out when no status or project changed.

DROP TRIGGER tasks_count_ins ON tasks;
DROP TRIGGER tasks_count_del ON tasks;
DROP TRIGGER tasks_count_upd ON tasks;
DROP FUNCTION task_counts_apply();

-- Adds n per (project, status) of the inserted rows; creates missing counter rows.
CREATE FUNCTION task_counts_after_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO task_counts (project_id, status, n)
  SELECT project_id, status, count(*) FROM new_rows GROUP BY project_id, status ORDER BY project_id, status
  ON CONFLICT (project_id, status) DO UPDATE SET n = task_counts.n + EXCLUDED.n;
  RETURN NULL;
END $$;

-- Moves the counts of the rows whose status or project changed (+1 new, -1 old, netted per counter row).
CREATE FUNCTION task_counts_after_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO task_counts (project_id, status, n)
  SELECT project_id, status, sum(d)
    FROM (SELECT project_id, status, 1 AS d FROM new_rows
          UNION ALL
          SELECT project_id, status, -1 AS d FROM old_rows) AS moved
   GROUP BY project_id, status
  HAVING sum(d) <> 0
   ORDER BY project_id, status
  ON CONFLICT (project_id, status) DO UPDATE SET n = task_counts.n + EXCLUDED.n;
  RETURN NULL;
END $$;

-- Subtracts the deleted rows. Only existing counter rows are touched: when a project delete cascades to its tasks,
-- its counter rows go with it (task_counts references projects ON DELETE CASCADE) and must not be recreated.
-- The rows are locked in key order first, since UPDATE … FROM does not promise an order.
CREATE FUNCTION task_counts_after_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  WITH gone AS (SELECT project_id, status, count(*) AS n FROM old_rows GROUP BY project_id, status),
  locked AS (
    SELECT c.project_id, c.status, gone.n FROM task_counts c JOIN gone USING (project_id, status)
     ORDER BY c.project_id, c.status FOR UPDATE OF c)
  UPDATE task_counts c SET n = c.n - locked.n FROM locked
   WHERE c.project_id = locked.project_id AND c.status = locked.status;
  RETURN NULL;
END $$;

-- TRUNCATE tasks (CASCADE) leaves no task: every counter is zero.
CREATE FUNCTION task_counts_after_truncate() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE task_counts SET n = 0 WHERE n <> 0;
  RETURN NULL;
END $$;

CREATE TRIGGER tasks_count_ins AFTER INSERT ON tasks REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION task_counts_after_insert();
CREATE TRIGGER tasks_count_upd AFTER UPDATE ON tasks REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION task_counts_after_update();
CREATE TRIGGER tasks_count_del AFTER DELETE ON tasks REFERENCING OLD TABLE AS old_rows
  FOR EACH STATEMENT EXECUTE FUNCTION task_counts_after_delete();
CREATE TRIGGER tasks_count_truncate AFTER TRUNCATE ON tasks
  FOR EACH STATEMENT EXECUTE FUNCTION task_counts_after_truncate();

-- The counters were right under the old triggers, but recount once so that this migration leaves them exact.
LOCK TABLE tasks IN SHARE ROW EXCLUSIVE MODE;
UPDATE task_counts c SET n = 0
 WHERE NOT EXISTS (SELECT 1 FROM tasks t WHERE t.project_id = c.project_id AND t.status = c.status) AND n <> 0;
INSERT INTO task_counts (project_id, status, n)
SELECT project_id, status, count(*) FROM tasks GROUP BY project_id, status
ON CONFLICT (project_id, status) DO UPDATE SET n = EXCLUDED.n WHERE task_counts.n <> EXCLUDED.n;
