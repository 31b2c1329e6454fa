import { useRef, useState } from 'react';
import { TASK_PRIORITIES, type Task, type TaskFields, type TaskPriority } from '../../api';
import { Dialog, Field } from '../../components';

export interface TaskDialogProps {
  /** the task to edit; undefined = a new task */
  task?: Task;
  open: boolean;
  busy: boolean;
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

/** What the Title field says to a blank title (empty, or only spaces: the API stores titles trimmed and refuses a blank one). */
const BLANK_TITLE = 'Give the task a title: it cannot be empty or only spaces.';

/**
 * Create or edit a task: title, description, priority, labels (comma-separated), assignee. Enter in a field saves; a
 * blank title is named at the Title field instead (before, Create was only disabled, so Enter said nothing).
 */
export function TaskDialog({ task, open, busy, onSave, onClose }: TaskDialogProps) {
  return (
    <Dialog open={open} title={task ? 'Edit task' : 'New task'} onClose={onClose}>
      {open ? <TaskForm key={task?.id ?? 'new'} task={task} busy={busy} onSave={onSave} onClose={onClose} /> : null}
    </Dialog>
  );
}

function TaskForm({ task, busy, onSave, onClose }: Omit<TaskDialogProps, 'open'>) {
  const [title, setTitle] = useState(task?.title ?? '');
  const [description, setDescription] = useState(task?.description ?? '');
  const [priority, setPriority] = useState<TaskPriority>(task?.priority ?? 'medium');
  const [labels, setLabels] = useState((task?.labels ?? []).join(', '));
  const [assignee, setAssignee] = useState(task?.assignee ?? '');
  // set by a save tried with a blank title; the error stays until the title is not blank
  const [triedBlank, setTriedBlank] = useState(false);
  const titleRef = useRef<HTMLInputElement>(null);
  const titleError = triedBlank && !title.trim() ? BLANK_TITLE : null;
  return (
    <form
      // the blank title is checked here, in the board's words, rather than by the browser's own bubble (`required`)
      noValidate
      onSubmit={(e) => {
        e.preventDefault();
        if (!title.trim()) {
          setTriedBlank(true);
          titleRef.current?.focus();
          return;
        }
        onSave({ title: title.trim(), description, priority, labels: parseLabels(labels), assignee: assignee.trim() || (task ? null : undefined) });
      }}
    >
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
      <Field label="Labels (comma-separated)">
        <input value={labels} onChange={(e) => setLabels(e.target.value)} />
      </Field>
      <div className="dialog-actions">
        <button type="button" onClick={onClose}>
          Cancel
        </button>
        <button type="submit" className="primary" disabled={busy}>
          {task ? 'Save' : 'Create task'}
        </button>
      </div>
    </form>
  );
}
