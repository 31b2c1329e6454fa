-- How many tries of a task gave it back because the platform could not be reached (each one a request that never
-- arrived), so the tries of a run's first flow are counted across the local try inside the first workflow task and
-- beginRun's activity attempts: three in all, the third's failure being the task's result (before, the local try came
-- on top of beginRun's three: a platform that could not be reached was tried four times).
ALTER TABLE scheduler_task_outcomes ADD COLUMN given_back integer NOT NULL DEFAULT 0;
