/**
 * Everything that must hold before an attempt may be merged, in one place: the attempt finished, not merged yet,
 * has a branch, and no `merge` approval of it is pending or rejected. Throws the AppError the merge endpoint answers.
 */
import type { Queryable } from '../db/pool';
import type { AttemptRow } from '../db/attempts';
import { mergeBlocker } from '../db/approvals';
import { conflict } from '../errors';

export async function checkMergePreconditions(db: Queryable, attempt: AttemptRow): Promise<void> {
  if (attempt.status === 'created' || attempt.status === 'running') {
    throw conflict(`Attempt ${attempt.id} is ${attempt.status}; wait for it to finish before merging`, 'CONFLICT', { status: attempt.status });
  }
  if (attempt.merged_at) throw conflict(`Attempt ${attempt.id} was already merged`, 'CONFLICT', { mergedAt: attempt.merged_at.toISOString() });
  if (attempt.cleaned_up || !attempt.branch || !attempt.base_branch || !attempt.host_queue) {
    throw conflict(`Attempt ${attempt.id} has no branch to merge`, 'CONFLICT', { reason: 'no_branch' });
  }
  const blocker = await mergeBlocker(db, attempt.id);
  if (blocker) {
    throw conflict(
      blocker.status === 'pending'
        ? `Attempt ${attempt.id} waits for merge approval ${blocker.approvalId}`
        : `Merge approval ${blocker.approvalId} of attempt ${attempt.id} was rejected`,
      'CONFLICT',
      { approvalId: blocker.approvalId, approvalStatus: blocker.status },
    );
  }
}
