/**
 * The board's columns as a strip of buttons with their counts, shown only in a phone-wide window (styles.css): there
 * the board shows one column at a time (snapping, the next one peeking at the right edge), and nothing said there
 * were cards further right ("In review" out of sight). The strip names every column with its count, marks the one in
 * view, and a tap scrolls the board to a column. The desktop board (all five columns side by side) does not show it.
 */
import { type RefObject, useEffect, useState } from 'react';
import type { BoardColumn } from './columns';

export function ColumnStrip({ columns, counts, board }: { columns: BoardColumn[]; counts: number[]; board: RefObject<HTMLDivElement | null> }) {
  const [inView, setInView] = useState(0);
  useEffect(() => {
    const el = board.current;
    if (!el) return;
    // the column whose left edge is nearest the board's (the snapped one)
    const follow = () => {
      const left = el.getBoundingClientRect().left;
      let best = 0;
      let bestDistance = Number.POSITIVE_INFINITY;
      [...el.children].forEach((c, i) => {
        const d = Math.abs(c.getBoundingClientRect().left - left);
        if (d < bestDistance) {
          bestDistance = d;
          best = i;
        }
      });
      setInView(best);
    };
    follow();
    el.addEventListener('scroll', follow, { passive: true });
    return () => el.removeEventListener('scroll', follow);
  }, [board]);
  return (
    <nav className="column-strip" aria-label="Columns">
      {columns.map((c, i) => (
        <button
          key={c.key}
          type="button"
          aria-current={i === inView ? 'true' : undefined}
          onClick={() => {
            const el = board.current;
            const target = el?.children[i] as HTMLElement | undefined;
            if (!el || !target) return;
            el.scrollTo({ left: target.offsetLeft - (el.firstElementChild as HTMLElement).offsetLeft, behavior: 'smooth' });
          }}
        >
          {c.title} <span className="count">{counts[i] ?? 0}</span>
        </button>
      ))}
    </nav>
  );
}
