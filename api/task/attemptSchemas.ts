/** Schemas of the attempt, process, diff, merge, branch and container routes. */
import { Type } from 'typebox';
import { MERGE_STRATEGIES } from '../../lib/attempts/mergeStrategy';
import { ATTEMPT_STATUSES } from '../../lib/db/attempts';
import { TEXT_PATTERN } from '../http/inputPolicy';
import { Id, Nullable, PageQuery, SeqAfter, StringEnum } from '../http/schemas';

export const AttemptOptionsSchema = Type.Object(
  {
    temperature: Type.Optional(Type.Number({ minimum: 0, maximum: 2 })),
    maxTokens: Type.Optional(Type.Integer({ minimum: 1, maximum: 100_000_000 })),
    timeout: Type.Optional(Type.Integer({ minimum: 1, maximum: 2_592_000, description: 'seconds one agent run may take (at most 30 days)' })),
  },
  { additionalProperties: false },
);

export const StartTaskBody = Type.Object(
  {
    llm: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
    options: Type.Optional(AttemptOptionsSchema),
    description: Type.Optional(Type.String({ maxLength: 20000, pattern: TEXT_PATTERN })),
  },
  { additionalProperties: false },
);

/** The longest Idempotency-Key a start or a follow-up accepts; a longer one is a 400 (never cut short, which could merge two keys). */
export const MAX_IDEMPOTENCY_KEY_LENGTH = 200;

/** Headers of POST /api/tasks/:id/start (other headers pass as they are). */
export const StartTaskHeaders = Type.Object({
  'idempotency-key': Type.Optional(
    Type.String({
      maxLength: MAX_IDEMPOTENCY_KEY_LENGTH,
      description:
        'Repeats of a start with the same key and the same body for the same task (also concurrent ones) return the first attempt; the key sent again with another body is a 422 IDEMPOTENCY_KEY_REUSED that starts nothing; an empty key is the same as none.',
    }),
  ),
});

/** Headers of POST /api/attempts/:id/follow-up (other headers pass as they are). */
export const FollowUpHeaders = Type.Object({
  'idempotency-key': Type.Optional(
    Type.String({
      maxLength: MAX_IDEMPOTENCY_KEY_LENGTH,
      description:
        "Repeats of a follow-up with the same key and the same body to the same attempt (also concurrent ones) run it once: the attempt's workflow drops a follow-up whose key it has taken (it remembers its last 500 keys) and each repeat answers 202 as the first did; the key sent again with another body is a 422 IDEMPOTENCY_KEY_REUSED that sends nothing; an empty key is the same as none.",
    }),
  ),
});

export const CreateAttemptBody = Type.Object(
  {
    taskId: Id(),
    llm: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
    options: Type.Optional(AttemptOptionsSchema),
    description: Type.Optional(Type.String({ maxLength: 20000, pattern: TEXT_PATTERN })),
  },
  { additionalProperties: false },
);

export const StartedTask = Type.Object({ attemptId: Type.String(), status: Type.String(), startedAt: Nullable(Type.String()), processId: Type.String(), branch: Nullable(Type.String()) });
export const CreatedAttempt = Type.Object({ id: Type.String(), taskId: Type.String(), llm: Type.String(), status: Type.String(), createdAt: Type.String() });
export const StartedAttempt = Type.Object({ id: Type.String(), status: Type.String(), startedAt: Nullable(Type.String()), processId: Type.String() });
export const CancelledAttempt = Type.Object({ id: Type.String(), status: Type.Literal('cancelled'), cancelledAt: Type.String() });

/** Why the removal of an attempt's worktree and branch did not remove them (lib/attempts/cleanup.ts). */
const cleanupErrorFields = {
  code: Type.String({ description: 'REPOSITORY_LOCKED (a git lock file), WORKTREE_LOCKED (git worktree lock) or CLEANUP_FAILED (git refused otherwise)' }),
  message: Type.String({ description: 'what git refused, what was kept and what to do' }),
  details: Type.Record(Type.String(), Type.Unknown(), { description: 'repository, worktreePath, branch, and lockFile or reason' }),
};
export const CleanupError = Type.Object(cleanupErrorFields, { description: 'why the worktree, branch or merge markers were not removed' });

/** The `cleanup` of a delete (attempt, task, project) and, when it failed, why for each attempt. */
export const DeleteCleanup = {
  cleanup: StringEnum(['done', 'pending', 'failed'] as const, {
    description:
      "done: the attempts' worktrees, branches and merge markers are removed; pending: a host did not remove them within attempts.deleteWaitMs (its worker is down): they are removed when it is back; failed: a host tried and git refused (cleanupErrors): what it kept stays until that is cleared, each error saying what was kept and what removes it then",
  }),
  cleanupErrors: Type.Optional(Type.Array(Type.Object({ attemptId: Type.String(), ...cleanupErrorFields }), { description: 'with cleanup failed: which attempts, and why' })),
};

export const Attempt = Type.Object({
  id: Type.String(),
  taskId: Type.String(),
  number: Type.Integer(),
  llm: Type.String(),
  model: Nullable(Type.String()),
  status: Type.String(),
  worktreePath: Nullable(Type.String()),
  branch: Nullable(Type.String()),
  baseBranch: Nullable(Type.String()),
  createdAt: Type.String(),
  startedAt: Nullable(Type.String()),
  completedAt: Nullable(Type.String()),
  cancelledAt: Nullable(Type.String()),
  duration: Nullable(Type.Number()),
  filesChanged: Type.Integer(),
  linesAdded: Type.Integer(),
  linesRemoved: Type.Integer(),
  changes: Type.Object({
    filesChanged: Type.Integer(),
    filesCreated: Type.Integer(),
    filesModified: Type.Integer(),
    filesDeleted: Type.Integer(),
    linesAdded: Type.Integer(),
    linesRemoved: Type.Integer(),
  }),
  cost: Type.Object({ inputTokens: Type.Integer(), outputTokens: Type.Integer(), totalCost: Type.Number() }),
  output: Type.Object({ summary: Type.String(), changes: Type.Array(Type.String()) }),
  processId: Nullable(Type.String()),
  error: Nullable(Type.String()),
  merged: Type.Boolean(),
  mergedAt: Nullable(Type.String()),
  mergeCommit: Nullable(Type.String()),
  cleanupError: Nullable(CleanupError),
  progress: Type.Optional(Type.Unknown()),
});

export const AttemptListQuery = Type.Object(
  {
    taskId: Type.Optional(Id({ minLength: 1 })),
    llm: Type.Optional(Type.String({ minLength: 1 })),
    status: Type.Optional(StringEnum(ATTEMPT_STATUSES)),
    ...PageQuery,
  },
  { additionalProperties: false },
);

export const LEVELS = ['debug', 'info', 'warn', 'error'] as const;

export const AttemptLogsQuery = Type.Object(
  {
    follow: Type.Optional(Type.Boolean()),
    level: Type.Optional(StringEnum(LEVELS)),
    since: Type.Optional(Type.String({ format: 'date-time' })),
  },
  { additionalProperties: false },
);

export const TaskLogsQuery = Type.Object(
  {
    attemptId: Type.Optional(Id({ minLength: 1 })),
    follow: Type.Optional(Type.Boolean()),
    level: Type.Optional(StringEnum(LEVELS)),
  },
  { additionalProperties: false },
);

export const ProcessLogsQuery = Type.Object(
  {
    follow: Type.Optional(Type.Boolean()),
    tail: Type.Optional(Type.Integer({ minimum: 1, maximum: 100000 })),
    after: Type.Optional(SeqAfter('resume: only lines with a seq greater than this', 'integer')),
  },
  { additionalProperties: false },
);

/** A streamed or complete NDJSON body: one JSON log entry per line. */
/** 200 of the log routes: NDJSON under its own media type, so the document says what the Content-Type header says. */
export const NdjsonBody = {
  description: 'one {level, message, timestamp, source, metadata, seq, processId} JSON object per line',
  content: { 'application/x-ndjson': { schema: Type.String() } },
};

export const DiffQuery = Type.Object(
  { file: Type.Optional(Type.String({ minLength: 1, maxLength: 4096 })), format: Type.Optional(StringEnum(['unified', 'split', 'json'] as const, { description: 'absent or json: the Diff resource (files[] + summary); unified: the git diff text + summary; split: side-by-side rows' })) },
  { additionalProperties: false },
);

const DiffLine = Type.Object({ type: Type.String(), lineNumber: Type.Integer(), content: Type.String() });
export const DiffFile = Type.Object({
  path: Type.String(),
  oldPath: Nullable(Type.String()),
  status: Type.String(),
  binary: Type.Boolean(),
  additions: Type.Integer(),
  deletions: Type.Integer(),
  changes: Type.Array(DiffLine),
  omitted: Type.Optional(Type.Boolean({ description: 'present (true) when the file has more changed lines than a diff shows (20,000, or a new file over 8 MiB): additions and deletions are counted, changes is empty' })),
});
export const DiffSummary = Type.Object({ filesChanged: Type.Integer(), additions: Type.Integer(), deletions: Type.Integer() });
const SplitSide = Nullable(Type.Object({ lineNumber: Type.Integer(), content: Type.String(), type: Type.String() }));
/** Without `format` (and with json) the spec's Diff: files[] {path, oldPath, status, binary, additions, deletions, changes[]} + summary. */
export const DiffResponse = Type.Object({
  format: StringEnum(['json', 'unified', 'split'] as const),
  diff: Type.Optional(Type.String()),
  files: Type.Optional(Type.Array(Type.Unknown())),
  summary: DiffSummary,
});
export const SplitFile = Type.Object({
  path: Type.String(),
  status: Type.String(),
  additions: Type.Integer(),
  deletions: Type.Integer(),
  rows: Type.Array(Type.Object({ left: SplitSide, right: SplitSide })),
  omitted: Type.Optional(Type.Boolean({ description: 'present (true) when the file has more changed lines than a diff shows: rows is empty' })),
});

export const MergeBody = Type.Object(
  {
    message: Type.Optional(Type.String({ minLength: 1, maxLength: 10000, pattern: TEXT_PATTERN })),
    strategy: Type.Optional(StringEnum(MERGE_STRATEGIES, { default: 'ff' })),
    cleanup: Type.Optional(Type.Boolean({ default: false })),
  },
  { additionalProperties: false },
);
export const MergeResult = Type.Object({
  attemptId: Type.String(),
  commitSha: Type.String(),
  merged: Type.Boolean(),
  mergedAt: Type.String(),
  cleanup: Type.Boolean({ description: 'the worktree and branch were removed (asked with cleanup: true)' }),
  cleanupError: Type.Optional(CleanupError),
  strategy: Type.String(),
});

export const CompareBody = Type.Object({ attemptIds: Type.Array(Id({ minLength: 1 }), { minItems: 2, maxItems: 2 }) }, { additionalProperties: false });
export const CompareRow = Type.Object({
  id: Type.String(),
  llm: Type.String(),
  status: Type.String(),
  duration: Nullable(Type.Number()),
  cost: Type.Number(),
  filesChanged: Type.Integer(),
  linesAdded: Type.Integer(),
  linesRemoved: Type.Integer(),
  files: Type.Array(Type.String()),
});
export const CompareResult = Type.Object({
  attempts: Type.Array(CompareRow),
  comparison: Type.Object({
    fasterAttemptId: Nullable(Type.String()),
    cheaperAttemptId: Nullable(Type.String()),
    smallerChangeAttemptId: Nullable(Type.String()),
    commonFiles: Type.Array(Type.String()),
    onlyInFirst: Type.Array(Type.String()),
    onlyInSecond: Type.Array(Type.String()),
  }),
});

export const FollowUpBody = Type.Object({ prompt: Type.String({ minLength: 1, maxLength: 100000, pattern: TEXT_PATTERN }), draftId: Type.Optional(Id({})), source: Type.Optional(Type.String()) }, { additionalProperties: false });

export const Process = Type.Object({
  id: Type.String(),
  attemptId: Type.String(),
  taskId: Type.String(),
  llm: Type.String(),
  model: Nullable(Type.String()),
  kind: Type.String(),
  status: Type.String(),
  pid: Nullable(Type.Integer()),
  worker: Nullable(Type.Object({ identity: Type.String(), host: Nullable(Type.String()) }, { description: 'the worker that ran the process (Temporal identity, host)' })),
  exitCode: Nullable(Type.Integer()),
  error: Nullable(Type.String()),
  startedAt: Type.String(),
  finishedAt: Nullable(Type.String()),
  duration: Type.Number(),
  resources: Type.Object({ cpuUsage: Type.Number(), memoryUsage: Type.Number(), diskIO: Type.Number(), networkIO: Type.Number() }),
  progress: Type.Object({ stage: Type.String(), current: Type.String(), percentage: Type.Number(), estimatedRemaining: Type.Number() }),
  tokens: Type.Object({ inputTokens: Type.Integer(), outputTokens: Type.Integer(), estimatedCost: Type.Number() }),
  cancelledAt: Nullable(Type.String()),
  stoppedAt: Nullable(Type.String()),
});

export const ProcessListQuery = Type.Object(
  {
    status: Type.Optional(StringEnum(['running', 'completed', 'failed', 'cancelled', 'stopped'] as const)),
    llm: Type.Optional(Type.String({ minLength: 1 })),
    attemptId: Type.Optional(Id({ minLength: 1 })),
    ...PageQuery,
  },
  { additionalProperties: false },
);

export const ProcessMetrics = Type.Object({
  processId: Type.String(),
  metrics: Type.Array(Type.Object({ timestamp: Type.String(), cpu: Type.Number(), memory: Type.Number(), diskIO: Type.Number(), networkIO: Type.Number() })),
  averages: Type.Object({ cpu: Type.Number(), memory: Type.Number() }),
});

export const StoppedProcess = Type.Object({ id: Type.String(), status: Type.String(), stoppedAt: Type.String(), duration: Type.Number() });
export const CancelledProcess = Type.Object({ id: Type.String(), status: Type.String(), cancelledAt: Type.String() });

const LastCommit = Nullable(Type.Object({ hash: Type.String(), message: Type.String(), author: Type.String(), date: Type.String() }));
export const BranchListing = Type.Object({
  currentBranch: Type.String(),
  branches: Type.Array(
    Type.Object({
      name: Type.String(),
      commit: Type.String(),
      isCurrent: Type.Boolean(),
      isDefault: Type.Boolean(),
      isManagedWorktree: Type.Boolean(),
      taskId: Type.Optional(Type.String()),
      attemptId: Type.Optional(Type.String()),
      lastCommit: LastCommit,
    }),
  ),
  managedBranches: Type.Array(Type.Object({ name: Type.String(), taskId: Type.String(), attemptId: Nullable(Type.String()) })),
});

export const Container = Type.Object({
  id: Type.String(),
  taskAttemptId: Type.String(),
  worktreePath: Nullable(Type.String()),
  branch: Nullable(Type.String()),
  baseBranch: Nullable(Type.String()),
  status: Type.String(),
  createdAt: Type.String(),
  diskUsage: Type.Object({ total: Type.Number(), used: Type.Number(), available: Type.Number() }),
  gitStatus: Type.Object({ ahead: Type.Integer(), behind: Type.Integer(), modified: Type.Integer(), untracked: Type.Integer(), conflicted: Type.Integer() }),
  files: Type.Object({ total: Type.Integer(), modified: Type.Integer(), added: Type.Integer(), deleted: Type.Integer() }),
});

export const TaskCancelResult = Type.Object({ taskId: Type.String(), status: Type.String(), cancelledAt: Type.String(), cancelledAttempts: Type.Array(Type.String()) });
