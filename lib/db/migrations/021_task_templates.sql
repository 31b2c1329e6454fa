-- Task templates: reusable, ordered lists of task definitions.
CREATE TABLE task_templates (
  id           text PRIMARY KEY,
  name         text NOT NULL,
  description  text NOT NULL DEFAULT '',
  category     text NOT NULL,
  -- [{title, description, order, estimatedTime?}] kept sorted by order
  tasks        jsonb NOT NULL DEFAULT '[]'::jsonb,
  -- {totalEstimatedTime, difficulty?}
  metadata     jsonb NOT NULL DEFAULT '{}'::jsonb,
  created_at   timestamptz NOT NULL DEFAULT now(),
  updated_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX task_templates_created_idx ON task_templates (created_at DESC, id DESC);
CREATE INDEX task_templates_category_idx ON task_templates (category, created_at DESC);
