import { useEffect, useRef, useState } from 'react';
import { ApiError, TASK_PRIORITIES, type Task, type TaskFields, type TaskPriority } from '../../api';
import { Dialog, ErrorMessage, Field } from '../../components';
import { readTaskDraft, type TaskDraft, writeTaskDraft } from './taskDraft';
import { editsOf, formOf, readTaskEdits, writeTaskEdits } from './taskEdits';

export interface TaskDialogProps {
  /** the task to edit; undefined = a new task */
  task?: Task;
  /** the project a new task goes to: what is typed is kept as its draft (taskDraft.ts); a task's edits, as its own (taskEdits.ts) */
  projectId: string;
  open: boolean;
  busy: boolean;
  /** the failed save, shown in the dialog (at the Labels field when the API names `labels`) */
  error?: unknown;
  /** the task being edited was deleted elsewhere meanwhile (its task.deleted event): said, and nothing to save */
  gone?: boolean;
  onSave: (fields: TaskFields) => void;
  onClose: () => void;
}

function parseLabels(text: string): string[] {
  return [
    ...new Set(
      text
        .split(',')
        .map((l) => l.trim())
        .filter(Boolean),
    ),
  ];
}

/** A label as the Labels field's error quotes it: a long one is cut short. */
const quoted = (label: string) => `"${label.length > 24 ? `${label.slice(0, 24)}…` : label}"`;

/**
 * What the API said of the labels, in the field's words ("Labels: "wip" must NOT have more than 100 characters"):
 * `labels` is the list (too many), `labels.N` the N-th label sent.
 */
function labelsError(error: unknown, sent: string[]): string | null {
  if (!(error instanceof ApiError)) return null;
  for (const [key, said] of Object.entries(error.details ?? {})) {
    if (typeof said !== 'string') continue;
    if (key === 'labels') return `Labels: ${said}`;
    const item = /^labels\.(\d+)$/.exec(key);
    if (item) return `Labels: ${quoted(sent[Number(item[1])] ?? '')} ${said}`;
  }
  return null;
}

/** What the Title field says to a blank title (empty, or only spaces: the API stores titles trimmed and refuses a blank one). */
const BLANK_TITLE = 'Give the task a title: it cannot be empty or only spaces.';

/**
 * Create or edit a task: title, description, priority, labels (comma-separated), assignee. Enter in a field saves; a
 * blank title is named at the Title field instead (before, Create was only disabled, so Enter said nothing). A new
 * task being typed is the project's draft: Escape closes the dialog and keeps it, New task brings it back, Cancel
 * discards it, Create ends it (the board clears it on success). A task's edits are kept the same way: Escape keeps
 * them, Edit brings them back, Cancel discards them, Save ends them.
 */
export function TaskDialog({ task, projectId, open, busy, error, gone, onSave, onClose }: TaskDialogProps) {
  return (
    <Dialog open={open} title={task ? 'Edit task' : 'New task'} onClose={onClose}>
      {open ? <TaskForm key={task?.id ?? `new:${projectId}`} task={task} projectId={projectId} busy={busy} error={error} gone={gone} onSave={onSave} onClose={onClose} /> : null}
    </Dialog>
  );
}

/** What the Edit dialog says when its task was deleted elsewhere while it was open. */
export const EDITED_TASK_GONE = 'This task was deleted elsewhere (another tab, or through the API), so there is nothing to save. Cancel closes this dialog.';

function TaskForm({ task, projectId, busy, error, gone, onSave, onClose }: Omit<TaskDialogProps, 'open'>) {
  // a new task starts from the project's draft, if one was left; a task, with the edits left on it over it
  const [draft] = useState(() => (task ? null : readTaskDraft(projectId)));
  const [edits] = useState(() => (task ? readTaskEdits(task.id) : null));
  const [initial] = useState<TaskDraft>(() => (task ? { ...formOf(task), ...edits } : (draft ?? { title: '', description: '', priority: 'medium', labels: '', assignee: '' })));
  const [title, setTitle] = useState(initial.title);
  const [description, setDescription] = useState(initial.description);
  const [priority, setPriority] = useState<TaskPriority>(initial.priority);
  const [labels, setLabels] = useState(initial.labels);
  const [assignee, setAssignee] = useState(initial.assignee);
  // kept while it is typed, so whatever closes the dialog (Escape, a reload) keeps it
  const [discarded, setDiscarded] = useState(false);
  useEffect(() => {
    if (discarded) return;
    const form = { title, description, priority, labels, assignee };
    if (task) writeTaskEdits(task.id, editsOf(task, form));
    else writeTaskDraft(projectId, form);
  }, [task, discarded, projectId, title, description, priority, labels, assignee]);
  // set by a save tried with a blank title; the error stays until the title is not blank
  const [triedBlank, setTriedBlank] = useState(false);
  const titleRef = useRef<HTMLInputElement>(null);
  const titleError = triedBlank && !title.trim() ? BLANK_TITLE : null;
  // the labels text the failed save sent (edited since: its error goes)
  const [sentLabels, setSentLabels] = useState<string | null>(null);
  const labelsSaidWrong = labelsError(error, parseLabels(labels));
  const labelsFieldError = sentLabels === labels ? labelsSaidWrong : null;
  return (
    <form
      // the blank title is checked here, in the board's words, rather than by the browser's own bubble (`required`)
      noValidate
      onSubmit={(e) => {
        e.preventDefault();
        if (gone) return;
        if (!title.trim()) {
          setTriedBlank(true);
          titleRef.current?.focus();
          return;
        }
        setSentLabels(labels);
        onSave({ title: title.trim(), description, priority, labels: parseLabels(labels), assignee: assignee.trim() || (task ? null : undefined) });
      }}
    >
      {draft || edits ? (
        <p className="muted" role="status">
          {draft ? 'Your unsaved draft is back. Cancel discards it.' : 'Your unsaved edits are back. Cancel discards them.'}
        </p>
      ) : null}
      <Field label="Title" error={titleError}>
        <input ref={titleRef} required value={title} onChange={(e) => setTitle(e.target.value)} maxLength={500} />
      </Field>
      <Field label="Description">
        <textarea value={description} onChange={(e) => setDescription(e.target.value)} />
      </Field>
      <div className="field-row">
        <Field label="Priority">
          <select value={priority} onChange={(e) => setPriority(e.target.value as TaskPriority)}>
            {TASK_PRIORITIES.map((p) => (
              <option key={p} value={p}>
                {p}
              </option>
            ))}
          </select>
        </Field>
        <Field label="Assignee">
          <input value={assignee} onChange={(e) => setAssignee(e.target.value)} maxLength={100} />
        </Field>
      </div>
      <Field label="Labels (comma-separated)" error={labelsFieldError}>
        <input value={labels} onChange={(e) => setLabels(e.target.value)} />
      </Field>
      {gone ? <ErrorMessage error={EDITED_TASK_GONE} /> : error && !labelsSaidWrong ? <ErrorMessage error={error} action /> : null}
      <div className="dialog-actions">
        <button
          type="button"
          onClick={() => {
            setDiscarded(true);
            if (task) writeTaskEdits(task.id, null);
            else writeTaskDraft(projectId, null);
            onClose();
          }}
        >
          Cancel
        </button>
        <button type="submit" className="primary" disabled={busy || gone}>
          {task ? 'Save' : 'Create task'}
        </button>
      </div>
    </form>
  );
}
