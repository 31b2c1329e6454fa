-- Drafts of an attempt: plain drafts, follow-up drafts (optionally auto-sent by followUpDraftWorkflow), retry drafts,
-- follow-up queues (optionally auto-executed by followUpQueueWorkflow) and draft queues.
CREATE TABLE drafts (
  id               text PRIMARY KEY,
  task_attempt_id  text NOT NULL REFERENCES attempts (id) ON DELETE CASCADE,
  content          text NOT NULL,
  type             text NOT NULL CHECK (type IN ('follow_up', 'retry', 'initial')),
  metadata         jsonb NOT NULL DEFAULT '{}'::jsonb,
  created_at       timestamptz NOT NULL DEFAULT now(),
  updated_at       timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX drafts_attempt_idx ON drafts (task_attempt_id, created_at);

CREATE TABLE follow_up_drafts (
  id               text PRIMARY KEY,
  task_attempt_id  text NOT NULL REFERENCES attempts (id) ON DELETE CASCADE,
  prompt           text NOT NULL,
  auto_send        boolean NOT NULL DEFAULT false,
  send_after       timestamptz,
  status           text NOT NULL CHECK (status IN ('draft', 'scheduled', 'sent', 'failed')),
  error            text,
  created_at       timestamptz NOT NULL DEFAULT now(),
  sent_at          timestamptz
);
CREATE INDEX follow_up_drafts_attempt_idx ON follow_up_drafts (task_attempt_id, created_at);

CREATE TABLE retry_drafts (
  id               text PRIMARY KEY,
  task_attempt_id  text NOT NULL REFERENCES attempts (id) ON DELETE CASCADE,
  original_prompt  text NOT NULL DEFAULT '',
  retry_prompt     text NOT NULL,
  retry_reason     text NOT NULL DEFAULT '',
  created_at       timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX retry_drafts_attempt_idx ON retry_drafts (task_attempt_id, created_at);

CREATE TABLE follow_up_queues (
  id               text PRIMARY KEY,
  task_attempt_id  text NOT NULL REFERENCES attempts (id) ON DELETE CASCADE,
  auto_execute     boolean NOT NULL DEFAULT false,
  created_at       timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX follow_up_queues_attempt_idx ON follow_up_queues (task_attempt_id, created_at);

CREATE TABLE follow_up_queue_items (
  id          text PRIMARY KEY,
  queue_id    text NOT NULL REFERENCES follow_up_queues (id) ON DELETE CASCADE,
  prompt      text NOT NULL,
  "order"     integer NOT NULL,
  status      text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'sent', 'failed')),
  sent_at     timestamptz
);
CREATE INDEX follow_up_queue_items_queue_idx ON follow_up_queue_items (queue_id, "order");

CREATE TABLE draft_queues (
  id               text PRIMARY KEY,
  task_attempt_id  text NOT NULL REFERENCES attempts (id) ON DELETE CASCADE,
  project_id       text NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
  created_at       timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE draft_queue_items (
  id           text PRIMARY KEY,
  queue_id     text NOT NULL REFERENCES draft_queues (id) ON DELETE CASCADE,
  title        text NOT NULL,
  description  text NOT NULL DEFAULT '',
  "order"      integer NOT NULL,
  status       text NOT NULL DEFAULT 'queued'
);
CREATE INDEX draft_queue_items_queue_idx ON draft_queue_items (queue_id, "order");
