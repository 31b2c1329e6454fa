-- Attempt numbers are never reused within a task: a deleted newest attempt's number (and so its branch name,
-- <prefix>/task-<id>-attempt-<n>) does not go to the next attempt while its branch may still await removal on its host.
ALTER TABLE tasks ADD COLUMN attempts_numbered integer NOT NULL DEFAULT 0;
UPDATE tasks t SET attempts_numbered = n.max FROM (SELECT task_id, max(number) AS max FROM attempts GROUP BY task_id) n WHERE n.task_id = t.id;
