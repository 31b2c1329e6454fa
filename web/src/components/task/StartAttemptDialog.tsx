/**
 * Starts an attempt of the task: the agent profile (the project's configured profiles, or the default) and an optional
 * extra description. "Default" is offered only when there is one (the task's assignee, or the project's default
 * profile): with neither, the server refuses it (AGENT_REQUIRED), so it was a first Start that always failed on a new
 * project; the first configured profile is chosen instead, and a line under the field says why. The refusal is still
 * shown, for a default removed elsewhere while the dialog is open.
 */
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useId, useRef, useState } from 'react';
import { api, ApiError, queryKeys } from '../../api';
import { Dialog } from '../Dialog';

export interface StartAttemptDialogProps {
  open: boolean;
  taskId: string;
  /** names of the configured agent profiles (GET /api/projects/:id → config.llms) */
  profiles: string[];
  defaultProfile: string | null;
  onClose: () => void;
  onStarted: (attemptId: string) => void;
}

/** The refusals that are about the profile field: no default at all, or a default (assignee, defaultLLM) that is no configured agent. */
const isProfileRefusal = (error: unknown): boolean => error instanceof ApiError && (error.code === 'AGENT_REQUIRED' || error.code === 'AGENT_UNKNOWN');

/** The start's error in the dialog's words: AGENT_REQUIRED and AGENT_UNKNOWN name the API's fields (`llm`, defaultLLM); the rest as the server says. */
function startErrorText(error: Error): string {
  if (error instanceof ApiError && error.code === 'AGENT_REQUIRED') return 'Choose an agent profile: this task has no assignee and its project no default agent profile.';
  if (error instanceof ApiError && error.code === 'AGENT_UNKNOWN')
    return "Choose an agent profile: the default (the task's assignee, else the project's default agent profile) is not a configured agent profile.";
  return error.message;
}

export function StartAttemptDialog({ open, taskId, profiles, defaultProfile, onClose, onStarted }: StartAttemptDialogProps) {
  const qc = useQueryClient();
  // null: not chosen here; then the default when there is one, else the first configured profile
  const [picked, setPicked] = useState<string | null>(null);
  const noDefault = defaultProfile === null && profiles.length > 0;
  const llm = picked ?? (noDefault ? (profiles[0] as string) : '');
  const hintId = useId();
  const labelId = useId();
  const [description, setDescription] = useState('');
  const profileSelect = useRef<HTMLSelectElement>(null);
  const errorId = useId();
  const start = useMutation({
    mutationFn: () => api<{ attemptId: string }>(`/tasks/${taskId}/start`, { method: 'POST', body: { ...(llm ? { llm } : {}), ...(description.trim() ? { description } : {}) } }),
    // said once, in the dialog: a toast would repeat it under the modal's backdrop
    meta: { inlineError: true },
    onError: (err) => {
      if (isProfileRefusal(err)) profileSelect.current?.focus();
    },
    onSuccess: (r) => {
      void qc.invalidateQueries({ queryKey: queryKeys.task(taskId) });
      onStarted(r.attemptId);
      setDescription('');
      onClose();
    },
  });
  // AGENT_REQUIRED and AGENT_UNKNOWN are about the profile: that field shows its error state, described by the message
  const profileMissing = isProfileRefusal(start.error);
  return (
    <Dialog open={open} title="Start an attempt" onClose={onClose}>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          start.mutate();
        }}
      >
        <label className="field">
          <span id={labelId}>Agent profile</span>
          <select
            ref={profileSelect}
            // its name is the label's words only, not the line under it
            aria-labelledby={labelId}
            value={llm}
            onChange={(e) => setPicked(e.target.value)}
            data-autofocus
            aria-invalid={profileMissing || undefined}
            aria-describedby={profileMissing ? errorId : noDefault ? hintId : undefined}
            onKeyDown={(e) => {
              // Enter starts (a select would open its list instead of submitting the form)
              if (e.key === 'Enter') {
                e.preventDefault();
                e.currentTarget.form?.requestSubmit();
              }
            }}
          >
            {noDefault ? null : <option value="">Default{defaultProfile ? ` (${defaultProfile})` : ' (task assignee or project default)'}</option>}
            {profiles.map((p) => (
              <option key={p} value={p}>
                {p}
              </option>
            ))}
          </select>
          {noDefault ? (
            <span id={hintId} className="muted field-hint">
              No default: this task has no assignee and its project no default agent profile.
            </span>
          ) : null}
        </label>
        <label className="field">
          <span>Extra instructions (optional)</span>
          <textarea value={description} onChange={(e) => setDescription(e.target.value)} maxLength={20000} />
        </label>
        {start.error ? (
          <p id={errorId} className="form-error" role="alert">
            {startErrorText(start.error)}
          </p>
        ) : null}
        <div className="dialog-actions">
          <button type="button" onClick={onClose}>
            Cancel
          </button>
          {/* a start waits for the workflow engine (up to its 10 s deadline when Temporal is slow): the button says so */}
          <button type="submit" className="primary" disabled={start.isPending}>
            {start.isPending ? 'Starting…' : 'Start attempt'}
          </button>
        </div>
      </form>
    </Dialog>
  );
}
