/**
 * The board's columns as a strip of buttons with their counts, shown only in a phone-wide window (styles.css): there
 * the board shows one column at a time (snapping, the next one peeking at the right edge), and nothing said there
 * were cards further right ("In review" out of sight). The strip names every column with its count, marks the one in
 * view, and a tap scrolls the board to a column. The desktop board (all five columns side by side) does not show it.
 * The strip is one row: where its five buttons do not fit (390 px), it scrolls sideways (a swipe, or Tab, which
 * brings the focused button into view) and keeps the marked one in view with some of its neighbour, so a swipe of the
 * board never marks a button out of sight. It wrapped onto two rows at 390 px.
 * A phone shows no scrollbar until the strip is touched, so nothing said it scrolled: the end that has more to
 * scroll fades out (its box's `data-more-before` / `data-more-after`, styles.css), and only while it has more.
 */
import { type RefObject, useEffect, useRef, useState } from 'react';
import type { BoardColumn } from './columns';

export function ColumnStrip({ columns, counts, board }: { columns: BoardColumn[]; counts: number[]; board: RefObject<HTMLDivElement | null> }) {
  const [inView, setInView] = useState(0);
  const strip = useRef<HTMLElement>(null);
  const more = useMoreToScroll(strip);
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
  // the marked button in the strip's view, with a little of the next one beyond it (there is more that way); the
  // strip alone is scrolled (scrollIntoView would scroll the page too)
  useEffect(() => {
    const el = strip.current;
    const button = el?.children[inView];
    if (!el || !button || el.scrollWidth <= el.clientWidth) return;
    const box = el.getBoundingClientRect();
    const b = button.getBoundingClientRect();
    // more than the fade at the edge (styles.css), so the marked button is never under it
    const peek = 40;
    const by = b.left < box.left + peek ? b.left - box.left - peek : b.right > box.right - peek ? b.right - box.right + peek : 0;
    if (by) el.scrollBy({ left: by, behavior: 'smooth' });
  }, [inView]);
  return (
    <div className="column-strip-box" data-more-before={more.before ? '' : undefined} data-more-after={more.after ? '' : undefined}>
      <nav className="column-strip" aria-label="Columns" ref={strip}>
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
    </div>
  );
}

/**
 * Whether a box scrolled sideways has more to show before (left of) and after (right of) what is in view, followed as
 * it scrolls and as it or its children change size (a count that grows, a wider window).
 */
function useMoreToScroll(ref: RefObject<HTMLElement | null>): { before: boolean; after: boolean } {
  const [more, setMore] = useState({ before: false, after: false });
  useEffect(() => {
    const el = ref.current;
    if (!el) return;
    const check = () => {
      const before = el.scrollLeft > 1;
      const after = el.scrollLeft + el.clientWidth < el.scrollWidth - 1;
      setMore((m) => (m.before === before && m.after === after ? m : { before, after }));
    };
    check();
    el.addEventListener('scroll', check, { passive: true });
    const resized = new ResizeObserver(check);
    resized.observe(el);
    for (const child of el.children) resized.observe(child);
    return () => {
      el.removeEventListener('scroll', check);
      resized.disconnect();
    };
  }, [ref]);
  return more;
}
