-- Code hosting: device-flow sign-ins, stored (encrypted) tokens, pull requests attached to attempts.

-- A device flow this service started; the device code is kept only as a SHA-256 hash.
CREATE TABLE codehost_device_flows (
  device_code_hash text PRIMARY KEY,
  user_email       text NOT NULL,
  status           text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'completed')),
  expires_at       timestamptz NOT NULL,
  created_at       timestamptz NOT NULL DEFAULT now(),
  completed_at     timestamptz
);

-- One code-host token per acting user, sealed with the encryption key (lib/secretBox.ts); never returned by the API.
CREATE TABLE codehost_tokens (
  user_email   text PRIMARY KEY,
  token_sealed text NOT NULL,
  token_type   text NOT NULL DEFAULT 'bearer',
  scope        text NOT NULL DEFAULT '',
  created_at   timestamptz NOT NULL DEFAULT now(),
  updated_at   timestamptz NOT NULL DEFAULT now()
);

-- The pull request of an attempt (created or attached); watched until merged or closed.
CREATE TABLE attempt_pull_requests (
  attempt_id  text PRIMARY KEY REFERENCES attempts (id) ON DELETE CASCADE,
  owner       text NOT NULL,
  repo        text NOT NULL,
  number      integer NOT NULL,
  html_url    text NOT NULL,
  api_url     text NOT NULL DEFAULT '',
  state       text NOT NULL DEFAULT 'open' CHECK (state IN ('open', 'closed', 'merged')),
  attached_by text NOT NULL,
  attached_at timestamptz NOT NULL DEFAULT now(),
  merged_at   timestamptz,
  checked_at  timestamptz
);
CREATE INDEX attempt_pull_requests_state_idx ON attempt_pull_requests (state);
