/** Starts an attempt of the task: the agent profile (the project's configured profiles, or the default) and an optional extra description. */
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

/** The start's error in the dialog's words: AGENT_REQUIRED names the API's fields (`llm`, defaultLLM); the rest as the server says. */
function startErrorText(error: Error): string {
  if (error instanceof ApiError && error.code === 'AGENT_REQUIRED') return 'Choose an agent profile: this task has no assignee and its project no default agent profile.';
  return error.message;
}

export function StartAttemptDialog({ open, taskId, profiles, defaultProfile, onClose, onStarted }: StartAttemptDialogProps) {
  const qc = useQueryClient();
  const [llm, setLlm] = useState('');
  const [description, setDescription] = useState('');
  const profileSelect = useRef<HTMLSelectElement>(null);
  const errorId = useId();
  const start = useMutation({
    mutationFn: () => api<{ attemptId: string }>(`/tasks/${taskId}/start`, { method: 'POST', body: { ...(llm ? { llm } : {}), ...(description.trim() ? { description } : {}) } }),
    // said once, in the dialog: a toast would repeat it under the modal's backdrop
    meta: { inlineError: true },
    onError: (err) => {
      if (err instanceof ApiError && err.code === 'AGENT_REQUIRED') profileSelect.current?.focus();
    },
    onSuccess: (r) => {
      void qc.invalidateQueries({ queryKey: queryKeys.task(taskId) });
      onStarted(r.attemptId);
      setDescription('');
      onClose();
    },
  });
  // AGENT_REQUIRED is about the profile: that field shows its error state, described by the message
  const profileMissing = start.error instanceof ApiError && start.error.code === 'AGENT_REQUIRED';
  return (
    <Dialog open={open} title="Start an attempt" onClose={onClose}>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          start.mutate();
        }}
      >
        <label className="field">
          <span>Agent profile</span>
          <select
            ref={profileSelect}
            value={llm}
            onChange={(e) => setLlm(e.target.value)}
            data-autofocus
            aria-invalid={profileMissing || undefined}
            aria-describedby={profileMissing ? errorId : undefined}
            onKeyDown={(e) => {
              // Enter starts (a select would open its list instead of submitting the form)
              if (e.key === 'Enter') {
                e.preventDefault();
                e.currentTarget.form?.requestSubmit();
              }
            }}
          >
            <option value="">Default{defaultProfile ? ` (${defaultProfile})` : ' (task assignee or project default)'}</option>
            {profiles.map((p) => (
              <option key={p} value={p}>
                {p}
              </option>
            ))}
          </select>
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
