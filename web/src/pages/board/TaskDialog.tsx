import { useState } from 'react';
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

/** Create or edit a task: title, description, priority, labels (comma-separated), assignee. Enter in a field saves. */
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
  return (
    <form
      onSubmit={(e) => {
        e.preventDefault();
        if (!title.trim()) return;
        onSave({ title: title.trim(), description, priority, labels: parseLabels(labels), assignee: assignee.trim() || (task ? null : undefined) });
      }}
    >
      <Field label="Title">
        <input required value={title} onChange={(e) => setTitle(e.target.value)} maxLength={500} />
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
        <button type="submit" className="primary" disabled={busy || !title.trim()}>
          {task ? 'Save' : 'Create task'}
        </button>
      </div>
    </form>
  );
}
