import { memo, useState } from 'react';
import { Link } from 'react-router';
import { TASK_STATUSES, type Task, type TaskStatus } from '../../api';
import { STATUS_LABELS } from './columns';

export const TASK_DRAG_TYPE = 'application/x-armada-task';

export interface TaskCardProps {
  task: Task;
  selected: boolean;
  onSelect: (id: string, selected: boolean) => void;
  /** `follow`: moved with the status select, so focus follows the card to its new column */
  onMove: (task: Task, status: TaskStatus, follow?: boolean) => void;
  onEdit: (task: Task) => void;
}

/**
 * One task on the board. Drag it to another column (HTML5 drag and drop), or change its status with the select
 * (the keyboard way to move it): the select only picks the status (ArrowDown on a closed select changes it at once),
 * its Move button moves the card; Escape puts the picked status back. The board then focuses the moved card's select.
 */
export const TaskCard = memo(function TaskCard({ task, selected, onSelect, onMove, onEdit }: TaskCardProps) {
  const [picked, setPicked] = useState<TaskStatus | null>(null);
  const pending = picked && picked !== task.status ? picked : null;
  return (
    <article
      className={`card${selected ? ' card-selected' : ''}`}
      draggable
      data-task-id={task.id}
      aria-label={task.title}
      onDragStart={(e) => {
        e.dataTransfer.setData(TASK_DRAG_TYPE, task.id);
        e.dataTransfer.effectAllowed = 'move';
      }}
    >
      <div className="card-top">
        <input type="checkbox" aria-label={`Select ${task.title}`} checked={selected} onChange={(e) => onSelect(task.id, e.target.checked)} />
        <Link className="card-title" to={`/tasks/${task.id}`}>
          {task.title}
        </Link>
      </div>
      <div className="card-meta">
        <span className={`badge priority-${task.priority}`}>{task.priority}</span>
        {task.status === 'failed' ? <span className="badge status-failed">failed</span> : null}
        {task.labels.slice(0, 3).map((l) => (
          <span key={l} className="badge label" title={l}>
            {l}
          </span>
        ))}
        {task.assignee ? <span className="assignee">@{task.assignee}</span> : null}
      </div>
      <div className="card-actions">
        <select
          className="card-status"
          aria-label={`Status of ${task.title}`}
          value={pending ?? task.status}
          onChange={(e) => setPicked(e.target.value as TaskStatus)}
          onKeyDown={(e) => {
            if (e.key === 'Escape' && pending) {
              e.preventDefault();
              setPicked(null);
            }
          }}
        >
          {TASK_STATUSES.map((s) => (
            <option key={s} value={s}>
              {STATUS_LABELS[s]}
            </option>
          ))}
        </select>
        {pending ? (
          <button
            type="button"
            className="small primary"
            aria-label={`Move ${task.title} to ${STATUS_LABELS[pending]}`}
            onClick={() => {
              setPicked(null);
              onMove(task, pending, true);
            }}
          >
            Move
          </button>
        ) : null}
        <button type="button" className="small" aria-label={`Edit ${task.title}`} onClick={() => onEdit(task)}>
          Edit
        </button>
      </div>
    </article>
  );
});
