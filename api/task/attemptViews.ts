/** JSON views of attempt and process rows. */
import { attemptDurationSeconds, type AttemptRow } from '../../lib/db/attempts';
import type { ProcessRow } from '../../lib/db/processes';

const iso = (d: Date | null): string | null => (d ? d.toISOString() : null);

export function attemptView(a: AttemptRow, processId: string | null) {
  return {
    id: a.id,
    taskId: a.task_id,
    number: a.number,
    llm: a.llm,
    model: a.model,
    status: a.status,
    worktreePath: a.cleaned_up ? null : a.worktree_path,
    branch: a.branch,
    baseBranch: a.base_branch,
    createdAt: a.created_at.toISOString(),
    startedAt: iso(a.started_at),
    completedAt: iso(a.completed_at),
    cancelledAt: iso(a.cancelled_at),
    duration: attemptDurationSeconds(a),
    filesChanged: a.files_changed,
    linesAdded: a.lines_added,
    linesRemoved: a.lines_removed,
    changes: {
      filesChanged: a.files_changed,
      filesCreated: a.files_created,
      filesModified: a.files_modified,
      filesDeleted: a.files_deleted,
      linesAdded: a.lines_added,
      linesRemoved: a.lines_removed,
    },
    cost: { inputTokens: Number(a.input_tokens), outputTokens: Number(a.output_tokens), totalCost: a.total_cost },
    output: { summary: a.summary, changes: a.output_changes },
    processId,
    error: a.error,
    merged: a.merged_at !== null,
    mergedAt: iso(a.merged_at),
    mergeCommit: a.merge_commit,
    cleanupError: a.cleanup_error ?? null,
  };
}

export function processDuration(p: ProcessRow, now = new Date()): number {
  return Math.max(0, ((p.finished_at ?? now).getTime() - p.started_at.getTime()) / 1000);
}

export function processView(p: ProcessRow) {
  return {
    id: p.id,
    attemptId: p.attempt_id,
    taskId: p.task_id,
    llm: p.llm,
    model: p.model,
    kind: p.kind,
    status: p.status,
    pid: p.pid,
    worker: p.worker_identity ? { identity: p.worker_identity, host: p.worker_host } : null,
    exitCode: p.exit_code,
    error: p.error,
    startedAt: p.started_at.toISOString(),
    finishedAt: iso(p.finished_at),
    duration: processDuration(p),
    resources: p.resources,
    progress: { ...{ stage: '', current: '', percentage: 0, estimatedRemaining: 0 }, ...p.progress },
    tokens: { inputTokens: Number(p.input_tokens), outputTokens: Number(p.output_tokens), estimatedCost: p.estimated_cost },
    cancelledAt: iso(p.cancelled_at),
    stoppedAt: iso(p.stopped_at),
  };
}
