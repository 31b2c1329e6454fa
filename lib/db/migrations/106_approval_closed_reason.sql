-- Why an approval was closed when no decision, expiry or requester's cancel did it: its workflow was closed from
-- Temporal's side (terminated, cancelled, failed, timed out) while it was pending, and it was recorded `cancelled`
-- (lib/approvals/closedWorkflows.ts). NULL otherwise. Shown as the approval's `closedReason` and in the 409 of a
-- response or cancel to it.
ALTER TABLE approvals ADD COLUMN IF NOT EXISTS closed_reason text;
