/** Shapes of the attempt, process, log, diff, merge and code-hosting responses the Task screen reads (api/task/attemptSchemas.ts, codehost.ts). */
export interface Attempt {
  id: string;
  taskId: string;
  number: number;
  llm: string;
  model: string | null;
  status: string;
  worktreePath: string | null;
  branch: string | null;
  baseBranch: string | null;
  createdAt: string;
  startedAt: string | null;
  completedAt: string | null;
  cancelledAt: string | null;
  duration: number | null;
  filesChanged: number;
  linesAdded: number;
  linesRemoved: number;
  cost: { inputTokens: number; outputTokens: number; totalCost: number };
  output: { summary: string; changes: string[] };
  processId: string | null;
  error: string | null;
  merged: boolean;
  mergedAt: string | null;
  mergeCommit: string | null;
  /** why a merge's cleanup did not remove the worktree and branch (activities/git/removeWorktree.ts); null otherwise */
  cleanupError: CleanupError | null;
}

export interface CleanupError {
  /** REPOSITORY_LOCKED, WORKTREE_LOCKED or CLEANUP_FAILED */
  code: string;
  /** what git refused, what was kept and what to do */
  message: string;
  details: Record<string, unknown>;
}

export interface ProcessInfo {
  id: string;
  attemptId: string;
  kind: string;
  status: string;
  startedAt: string;
  finishedAt: string | null;
}

/** One entry of `/ws/execution-processes/:id/logs/normalized`. */
export interface LogEntry {
  seq: number;
  level: string;
  message: string;
  timestamp: string;
  source: string;
}

export interface DiffSummary {
  filesChanged: number;
  additions: number;
  deletions: number;
}

export interface UnifiedDiff {
  format: 'unified';
  diff: string;
  summary: DiffSummary;
}

export type MergeStrategy = 'ff' | 'no-ff' | 'squash';

export interface MergeResult {
  attemptId: string;
  commitSha: string;
  merged: boolean;
  mergedAt: string;
  /** the worktree and branch were removed (asked with cleanup: true) */
  cleanup: boolean;
  cleanupError?: CleanupError;
  strategy: string;
}

export interface PullRequest {
  number: number;
  title: string;
  state: string;
  htmlUrl: string;
  head: string;
  base: string;
}

export interface DeviceCode {
  device_code: string;
  user_code: string;
  verification_uri: string;
  expires_in: number;
  interval: number;
}

export interface CompareRow {
  id: string;
  llm: string;
  status: string;
  duration: number | null;
  cost: number;
  filesChanged: number;
  linesAdded: number;
  linesRemoved: number;
  files: string[];
}

export interface CompareResult {
  attempts: CompareRow[];
  comparison: {
    fasterAttemptId: string | null;
    cheaperAttemptId: string | null;
    smallerChangeAttemptId: string | null;
    commonFiles: string[];
    onlyInFirst: string[];
    onlyInSecond: string[];
  };
}

export interface Approval {
  id: string;
  taskAttemptId: string;
  type: string;
  title: string;
  status: string;
  expiresAt: string | null;
}

export const RUNNING_STATUSES = ['created', 'running'];

export { formatDuration } from '../duration';
