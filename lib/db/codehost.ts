/** SQL for the code-hosting tables: device flows, sealed tokens, attempt pull requests. */
import crypto from 'node:crypto';
import type { Queryable } from './pool';

export const hashDeviceCode = (code: string): string => crypto.createHash('sha256').update(code).digest('hex');

export async function insertDeviceFlow(db: Queryable, deviceCode: string, userEmail: string, expiresInSeconds: number): Promise<void> {
  await db.query(
    `INSERT INTO codehost_device_flows (device_code_hash, user_email, expires_at) VALUES ($1, $2, now() + make_interval(secs => $3))
     ON CONFLICT (device_code_hash) DO NOTHING`,
    [hashDeviceCode(deviceCode), userEmail, expiresInSeconds],
  );
}

export interface DeviceFlowRow {
  device_code_hash: string;
  user_email: string;
  status: 'pending' | 'completed';
  expires_at: Date;
}

export async function getDeviceFlow(db: Queryable, deviceCode: string, forUpdate = false): Promise<DeviceFlowRow | undefined> {
  const { rows } = await db.query<DeviceFlowRow>(
    `SELECT * FROM codehost_device_flows WHERE device_code_hash = $1${forUpdate ? ' FOR UPDATE' : ''}`,
    [hashDeviceCode(deviceCode)],
  );
  return rows[0];
}

export async function completeDeviceFlow(db: Queryable, deviceCode: string): Promise<void> {
  await db.query(`UPDATE codehost_device_flows SET status = 'completed', completed_at = now() WHERE device_code_hash = $1`, [hashDeviceCode(deviceCode)]);
}

export async function upsertToken(db: Queryable, userEmail: string, sealed: string, tokenType: string, scope: string): Promise<void> {
  await db.query(
    `INSERT INTO codehost_tokens (user_email, token_sealed, token_type, scope) VALUES ($1, $2, $3, $4)
     ON CONFLICT (user_email) DO UPDATE SET token_sealed = EXCLUDED.token_sealed, token_type = EXCLUDED.token_type,
       scope = EXCLUDED.scope, updated_at = now()`,
    [userEmail, sealed, tokenType, scope],
  );
}

export async function getSealedToken(db: Queryable, userEmail: string): Promise<string | undefined> {
  const { rows } = await db.query<{ token_sealed: string }>('SELECT token_sealed FROM codehost_tokens WHERE user_email = $1', [userEmail]);
  return rows[0]?.token_sealed;
}

export interface AttemptPullRequestRow {
  attempt_id: string;
  owner: string;
  repo: string;
  number: number;
  html_url: string;
  api_url: string;
  state: 'open' | 'closed' | 'merged';
  attached_by: string;
  attached_at: Date;
  merged_at: Date | null;
  checked_at: Date | null;
}

export interface NewAttemptPullRequest {
  attemptId: string;
  owner: string;
  repo: string;
  number: number;
  htmlUrl: string;
  apiUrl: string;
  state: 'open' | 'closed' | 'merged';
  attachedBy: string;
}

/** Attaches (or re-attaches) the attempt's pull request. */
export async function upsertAttemptPullRequest(db: Queryable, pr: NewAttemptPullRequest): Promise<AttemptPullRequestRow> {
  const { rows } = await db.query<AttemptPullRequestRow>(
    `INSERT INTO attempt_pull_requests (attempt_id, owner, repo, number, html_url, api_url, state, attached_by)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
     ON CONFLICT (attempt_id) DO UPDATE SET owner = EXCLUDED.owner, repo = EXCLUDED.repo, number = EXCLUDED.number,
       html_url = EXCLUDED.html_url, api_url = EXCLUDED.api_url, state = EXCLUDED.state, attached_by = EXCLUDED.attached_by,
       attached_at = now(), merged_at = NULL, checked_at = NULL
     RETURNING *`,
    [pr.attemptId, pr.owner, pr.repo, pr.number, pr.htmlUrl, pr.apiUrl, pr.state, pr.attachedBy],
  );
  return rows[0] as AttemptPullRequestRow;
}

export async function getAttemptPullRequest(db: Queryable, attemptId: string): Promise<AttemptPullRequestRow | undefined> {
  const { rows } = await db.query<AttemptPullRequestRow>('SELECT * FROM attempt_pull_requests WHERE attempt_id = $1', [attemptId]);
  return rows[0];
}

export async function setPullRequestState(db: Queryable, attemptId: string, state: 'open' | 'closed' | 'merged', mergedAt: Date | null): Promise<void> {
  await db.query(
    `UPDATE attempt_pull_requests SET state = $2, merged_at = COALESCE($3, merged_at), checked_at = now() WHERE attempt_id = $1`,
    [attemptId, state, mergedAt],
  );
}

export interface AttemptWithProject {
  attempt_id: string;
  task_id: string;
  task_title: string;
  branch: string | null;
  base_branch: string | null;
  /** the commit the attempt's branch was made from */
  base_commit: string | null;
  worktree_path: string | null;
  /** its worktree and branch were removed (a merge's cleanup, a delete's) */
  cleaned_up: boolean;
  /** the task queue of the worker that holds the attempt's worktree */
  host_queue: string | null;
  project_id: string;
  repo_url: string;
  repo_branch: string;
  git_repo_path: string | null;
}

/** An attempt with what PR creation needs of its project. */
export async function getAttemptWithProject(db: Queryable, attemptId: string): Promise<AttemptWithProject | undefined> {
  const { rows } = await db.query<AttemptWithProject>(
    `SELECT a.id AS attempt_id, a.task_id, t.title AS task_title, a.branch, a.base_branch, a.base_commit, a.worktree_path, a.cleaned_up, a.host_queue,
            p.id AS project_id, p.repo_url, p.repo_branch, p.git_repo_path
       FROM attempts a JOIN tasks t ON t.id = a.task_id JOIN projects p ON p.id = t.project_id
      WHERE a.id = $1`,
    [attemptId],
  );
  return rows[0];
}
