import { useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import { api, queryKeys } from '../../api';
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
  onApply: (templateId: string) => void;
  onClose: () => void;
}

/** Pick a task template and add its tasks to this project. */
export function TemplateDialog({ open, busy, onApply, onClose }: TemplateDialogProps) {
  const templates = useQuery({
    queryKey: queryKeys.taskTemplates(),
    queryFn: ({ signal }) => api<Template[]>('/task-templates', { query: { limit: 100 }, signal }),
    enabled: open,
    meta: { inlineError: true },
  });
  const [choice, setChoice] = useState('');
  const list = templates.data ?? [];
  const selected = choice || list[0]?.id || '';
  return (
    <Dialog open={open} title="Apply a template" onClose={onClose}>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          if (selected) onApply(selected);
        }}
      >
        {templates.error ? <ErrorMessage error={templates.error} /> : null}
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
