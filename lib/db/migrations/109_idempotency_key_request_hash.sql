-- The request an Idempotency-Key was first sent with: the sha256 (hex) of its body as canonical JSON (object keys
-- sorted; lib/attempts/requestHash.ts). A repeat of the key with another body is a 422 IDEMPOTENCY_KEY_REUSED
-- instead of the first request's answer (docs/attempts.md). The starts' keys (scope task-start:<taskId>) and, from
-- now, the follow-ups' (scope follow-up:<attemptId>, the attempt itself as attempt_id). NULL in a row written
-- before: its body is not known, so any body is taken as its repeat, as before.
ALTER TABLE attempt_idempotency_keys ADD COLUMN IF NOT EXISTS request_hash text;
