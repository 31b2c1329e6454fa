-- Why the last removal of an attempt's worktree and branch (a merge with cleanup) did not remove them, as the error
-- the API shows: {code, message, details} (activities/git/removeWorktree.ts); NULL when none failed or a later
-- removal succeeded. cleaned_up stays false meanwhile, so a DELETE of the attempt removes them again.
ALTER TABLE attempts ADD COLUMN cleanup_error jsonb;
