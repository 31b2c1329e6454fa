import { memo } from 'react';
import { Link } from 'react-router';
import { TASK_STATUSES, type Task, type TaskStatus } from '../../api';
import { STATUS_LABELS } from './columns';

export const TASK_DRAG_TYPE = 'application/x-armada-task';

export interface TaskCardProps {
  task: Task;
  selected: boolean;
  onSelect: (id: string, selected: boolean) => void;
  onMove: (task: Task, status: TaskStatus) => void;
  onEdit: (task: Task) => void;
}

/**
 * One task on the board. Drag it to another column (HTML5 drag and drop), or change its status with the select
 * (the keyboard way to move it).
 */
export const TaskCard = memo(function TaskCard({ task, selected, onSelect, onMove, onEdit }: TaskCardProps) {
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
          <span key={l} className="badge label">
            {l}
          </span>
        ))}
        {task.assignee ? <span className="assignee">@{task.assignee}</span> : null}
      </div>
      <div className="card-actions">
        <select aria-label={`Status of ${task.title}`} value={task.status} onChange={(e) => onMove(task, e.target.value as TaskStatus)}>
          {TASK_STATUSES.map((s) => (
            <option key={s} value={s}>
              {STATUS_LABELS[s]}
            </option>
          ))}
        </select>
        <button type="button" className="small" aria-label={`Edit ${task.title}`} onClick={() => onEdit(task)}>
          Edit
        </button>
      </div>
    </article>
  );
});
