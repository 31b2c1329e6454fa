-- A start moves its task to in_progress in its first statement (phase 1), so a client that reads the task right
-- after the 200 sees it in progress; the task.status_changed event waits for the confirmation, like attempt.started.
-- start_task_before keeps what the task was before that move ({status, completedAt, updatedAt, movedAt}) while the
-- start is pending: the confirmation publishes the change from it, and a start Temporal refused puts the task back.
-- NULL when the task was in progress already, and once the start is confirmed or was made before this migration.
ALTER TABLE attempts ADD COLUMN start_task_before jsonb;
