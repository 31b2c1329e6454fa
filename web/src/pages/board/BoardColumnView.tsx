import { useVirtualizer } from '@tanstack/react-virtual';
import { useRef, useState } from 'react';
import type { Task, TaskStatus } from '../../api';
import type { BoardColumn } from './columns';
import { TASK_DRAG_TYPE, TaskCard } from './TaskCard';

export interface BoardColumnViewProps {
  column: BoardColumn;
  tasks: Task[];
  selected: Set<string>;
  onSelect: (id: string, selected: boolean) => void;
  onMove: (task: Task, status: TaskStatus, follow?: boolean) => void;
  onMoveById: (taskId: string, status: TaskStatus) => void;
  onEdit: (task: Task) => void;
  /** What the column says when it holds no card (default "No tasks"). */
  empty?: string;
}

const CARD_HEIGHT = 112;

/** One column: its title and count, a drop target, and its cards (virtualised: only the visible ones are rendered). */
export function BoardColumnView({ column, tasks, selected, onSelect, onMove, onMoveById, onEdit, empty = 'No tasks' }: BoardColumnViewProps) {
  const scrollRef = useRef<HTMLDivElement>(null);
  const [over, setOver] = useState(false);
  const virtualizer = useVirtualizer({
    count: tasks.length,
    getScrollElement: () => scrollRef.current,
    estimateSize: () => CARD_HEIGHT,
    overscan: 6,
    getItemKey: (i) => tasks[i]?.id ?? i,
  });
  const headingId = `column-${column.key}`;
  return (
    <section
      className={`column${over ? ' column-over' : ''}`}
      aria-labelledby={headingId}
      data-column={column.key}
      onDragOver={(e) => {
        if (!e.dataTransfer.types.includes(TASK_DRAG_TYPE)) return;
        e.preventDefault();
        e.dataTransfer.dropEffect = 'move';
        if (!over) setOver(true);
      }}
      onDragLeave={(e) => {
        if (!e.currentTarget.contains(e.relatedTarget as Node | null)) setOver(false);
      }}
      onDrop={(e) => {
        e.preventDefault();
        setOver(false);
        const id = e.dataTransfer.getData(TASK_DRAG_TYPE);
        if (id) onMoveById(id, column.target);
      }}
    >
      <h2 id={headingId} className="column-title">
        {column.title} <span className="count">{tasks.length}</span>
      </h2>
      <div className="column-scroll" ref={scrollRef}>
        {tasks.length === 0 ? <p className="muted empty">{empty}</p> : null}
        <div className="column-inner" style={{ height: virtualizer.getTotalSize() }}>
          {virtualizer.getVirtualItems().map((item) => {
            const task = tasks[item.index] as Task;
            return (
              <div key={item.key} className="card-slot" data-index={item.index} ref={virtualizer.measureElement} style={{ transform: `translateY(${item.start}px)` }}>
                <TaskCard task={task} selected={selected.has(task.id)} onSelect={onSelect} onMove={onMove} onEdit={onEdit} />
              </div>
            );
          })}
        </div>
      </div>
    </section>
  );
}
