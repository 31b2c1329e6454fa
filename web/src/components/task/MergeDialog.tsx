/**
 * Merges an attempt's branch into its base: fast-forward, merge commit or squash, optional message and cleanup.
 * A merge approval that blocks it (lib/attempts/mergePreconditions.ts: 409 with details.approvalId) is shown as the
 * gate, with a link to the approvals inbox; without one, a merge approval can be requested from here.
 */
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { Link } from 'react-router';
import { ApiError, api, queryKeys } from '../../api';
import { Dialog } from '../Dialog';
import { showToast } from '../toastStore';
import type { Approval, Attempt, MergeResult, MergeStrategy } from './taskTypes';

const STRATEGIES: { value: MergeStrategy; label: string; hint: string }[] = [
  { value: 'ff', label: 'Fast-forward', hint: 'move the base branch to the attempt (no new commit when possible)' },
  { value: 'no-ff', label: 'Merge commit', hint: 'always record a merge commit' },
  { value: 'squash', label: 'Squash', hint: 'one commit with all the attempt’s changes' },
];

export function MergeDialog({ open, attempt, taskTitle, onClose }: { open: boolean; attempt: Attempt; taskTitle: string; onClose: () => void }) {
  const qc = useQueryClient();
  const [strategy, setStrategy] = useState<MergeStrategy>('ff');
  const [message, setMessage] = useState('');
  const [cleanup, setCleanup] = useState(false);
  const [gateId, setGateId] = useState<string | null>(null);
  const gate = useQuery({
    queryKey: ['approvals', 'detail', gateId],
    queryFn: ({ signal }) => api<Approval>(`/approvals/${gateId}`, { signal }),
    enabled: open && !!gateId,
  });
  const merge = useMutation({
    mutationFn: () =>
      api<MergeResult>(`/attempts/${attempt.id}/merge`, { method: 'POST', body: { strategy, cleanup, ...(message.trim() ? { message } : {}) } }),
    onSuccess: (r) => {
      // a cleanup git refused: the attempt's panel says why and what to do (CleanupNote)
      const kept = r.cleanupError ? '; the worktree and branch were not removed (see the attempt)' : '';
      showToast('info', `Merged (${r.strategy}) as ${r.commitSha.slice(0, 10)}${kept}`);
      void qc.invalidateQueries({ queryKey: queryKeys.task(attempt.taskId) });
      void qc.invalidateQueries({ queryKey: queryKeys.attempt(attempt.id) });
      onClose();
    },
    onError: (err) => {
      const id = err instanceof ApiError ? err.details?.approvalId : undefined;
      if (typeof id === 'string') setGateId(id);
    },
  });
  const request = useMutation({
    mutationFn: () => api<Approval>('/approvals', { method: 'POST', body: { taskAttemptId: attempt.id, type: 'merge', title: `Merge: ${taskTitle}`.slice(0, 200) } }),
    onSuccess: (a) => setGateId(a.id),
  });
  const gateStatus = gate.data?.status ?? (merge.error instanceof ApiError ? (merge.error.details?.approvalStatus as string | undefined) : undefined);
  return (
    <Dialog open={open} title={`Merge attempt #${attempt.number}`} onClose={onClose}>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          merge.mutate();
        }}
      >
        <p className="muted">
          {attempt.branch} → {attempt.baseBranch}
        </p>
        {attempt.status === 'failed' ? (
          // the service merges what a failed attempt left: say so before it is merged as if the work were done
          <p className="banner banner-warning">The attempt failed: these are the changes it left before it stopped. Check its log and diff before merging them.</p>
        ) : null}
        <fieldset className="field">
          <legend>Strategy</legend>
          {STRATEGIES.map((s) => (
            <label key={s.value} className="radio-row">
              <input type="radio" name="strategy" value={s.value} checked={strategy === s.value} onChange={() => setStrategy(s.value)} />
              <span>
                <strong>{s.label}</strong> <span className="muted">{s.hint}</span>
              </span>
            </label>
          ))}
        </fieldset>
        <label className="field">
          <span>Commit message (optional)</span>
          <input value={message} onChange={(e) => setMessage(e.target.value)} maxLength={10000} />
        </label>
        <label className="checkbox-row">
          <input type="checkbox" checked={cleanup} onChange={(e) => setCleanup(e.target.checked)} /> Remove the worktree and branch after merging
        </label>
        {gateId ? (
          <div className="banner banner-warning approval-gate" role="status">
            <span>
              Merge approval {gateStatus ?? 'pending'}
              {gate.data?.expiresAt ? ` (expires ${new Date(gate.data.expiresAt).toLocaleString()})` : ''}: the merge waits for it.
            </span>
            <Link to="/approvals">Open approvals</Link>
          </div>
        ) : null}
        {merge.error ? (
          <p className="form-error" role="alert">
            {merge.error.message}
          </p>
        ) : null}
        <div className="dialog-actions">
          {!gateId ? (
            <button type="button" onClick={() => request.mutate()} disabled={request.isPending}>
              Request merge approval
            </button>
          ) : null}
          <button type="button" onClick={onClose}>
            Cancel
          </button>
          <button type="submit" className="primary" disabled={merge.isPending} data-autofocus>
            Merge
          </button>
        </div>
      </form>
    </Dialog>
  );
}
