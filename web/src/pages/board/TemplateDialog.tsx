import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useEffect, useState } from 'react';
import { ApiError, api, queryKeys } from '../../api';
import { Dialog, ErrorMessage, Field } from '../../components';

interface Template {
  id: string;
  name: string;
  description?: string;
  tasks: unknown[];
}

export interface TemplateDialogProps {
  open: boolean;
  busy: boolean;
  /** the failed apply, shown in the dialog (a toast would sit under the modal's backdrop) */
  error?: unknown;
  onApply: (templateId: string) => void;
  onClose: () => void;
}

/**
 * Pick a task template and add its tasks to this project. A failed apply is said here; a template deleted since the
 * list was read (404) also drops out of the list, which is read again.
 */
export function TemplateDialog({ open, busy, error, onApply, onClose }: TemplateDialogProps) {
  const qc = useQueryClient();
  const gone = error instanceof ApiError && error.status === 404;
  useEffect(() => {
    if (gone) void qc.invalidateQueries({ queryKey: queryKeys.taskTemplates() });
  }, [gone, qc]);
  const templates = useQuery({
    queryKey: queryKeys.taskTemplates(),
    queryFn: ({ signal }) => api<Template[]>('/task-templates', { query: { limit: 100 }, signal }),
    enabled: open,
    staleTime: 0, // templates have no events: each opening reads the list as it is now
    meta: { inlineError: true },
  });
  const [choice, setChoice] = useState('');
  const list = templates.data ?? [];
  // the one picked while it is listed (a template deleted elsewhere leaves the list), else the first
  const selected = list.some((t) => t.id === choice) ? choice : (list[0]?.id ?? '');
  return (
    <Dialog open={open} title="Apply a template" onClose={onClose}>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          if (selected) onApply(selected);
        }}
      >
        {templates.error ? <ErrorMessage error={templates.error} /> : null}
        {error ? <ErrorMessage error={error} action /> : null}
        {templates.isPending ? (
          <p className="muted" role="status">
            Loading templates…
          </p>
        ) : null}
        {templates.data && list.length === 0 ? <p className="muted">No templates yet: create one with POST /api/task-templates.</p> : null}
        {list.length ? (
          <Field label="Template">
            <select value={selected} onChange={(e) => setChoice(e.target.value)}>
              {list.map((t) => (
                <option key={t.id} value={t.id}>
                  {t.name} ({t.tasks.length} tasks)
                </option>
              ))}
            </select>
          </Field>
        ) : null}
        <div className="dialog-actions">
          <button type="button" onClick={onClose}>
            Cancel
          </button>
          <button type="submit" className="primary" disabled={busy || !selected}>
            Apply
          </button>
        </div>
      </form>
    </Dialog>
  );
}
