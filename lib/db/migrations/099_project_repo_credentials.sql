-- The credentials of a project's repository URL (https://user:secret@host/…), sealed with the stack's encryption key
-- (lib/secretBox.ts) as JSON {username, password}; repo_url then holds the URL as shown (user:***@). NULL for a URL
-- without credentials. Rows written before this hold the URL as given in repo_url: SQL cannot see the key, so the
-- task service seals them when it starts (lib/projects/repoCredentials.ts, docs/security.md#credentials-in-urls).
ALTER TABLE projects ADD COLUMN repo_credentials_sealed text;
