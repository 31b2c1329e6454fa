-- Approval requests: the projection of approvalWorkflow (approval:<id>). The workflow owns the decision; these rows
-- make "pending for the current user" and the detail view plain SQL.
CREATE TABLE approvals (
  id               text PRIMARY KEY,
  task_attempt_id  text NOT NULL REFERENCES attempts (id) ON DELETE CASCADE,
  type             text NOT NULL CHECK (type IN ('merge', 'deploy', 'custom')),
  title            text NOT NULL,
  description      text,
  metadata         jsonb NOT NULL DEFAULT '{}'::jsonb,
  -- NULL = any user may answer (and one approval approves)
  approvers        text[],
  expires_at       timestamptz,
  status           text NOT NULL DEFAULT 'pending'
                   CHECK (status IN ('pending', 'approved', 'rejected', 'expired', 'cancelled')),
  created_by       text NOT NULL,
  created_at       timestamptz NOT NULL DEFAULT now(),
  decided_at       timestamptz
);
CREATE INDEX approvals_pending_idx ON approvals (created_at, id) WHERE status = 'pending';
CREATE INDEX approvals_attempt_idx ON approvals (task_attempt_id, type, created_at);
CREATE INDEX approvals_approvers_idx ON approvals USING gin (approvers);

CREATE TABLE approval_responses (
  approval_id   text NOT NULL REFERENCES approvals (id) ON DELETE CASCADE,
  approver      text NOT NULL,
  decision      text NOT NULL CHECK (decision IN ('approved', 'rejected')),
  comment       text NOT NULL DEFAULT '',
  responded_at  timestamptz NOT NULL,
  PRIMARY KEY (approval_id, approver)
);
