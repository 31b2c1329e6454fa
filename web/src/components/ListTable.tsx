import type { ReactNode } from 'react';
import { useScrolls } from './scrollBox';

/**
 * A list shown as a table: its column headers (those named in `numeric` aligned like their numbers; with `actions`, a
 * last column whose header only screen readers read), one row per item, or the `empty` text when there is none.
 * While the items are not known yet: "Loading…" when `loading` says they are on their way (the query is pending),
 * else nothing (an error the screen shows above, a query not enabled). `className` adds to the table's own class.
 * With `actions`, that last column stays in view at the right edge while a table wider than the window scrolls under
 * it (`.has-actions`, styles.css): on a phone the rows' buttons were past the edge, with nothing saying so. The columns
 * named in `wide` are shown in a wide box only (`.wide-only`; their cells carry the class too): a narrow one shows
 * what they hold elsewhere in the row (under its main text, `RowFacts`: Projects under the project's name, the
 * Scheduler's lists under the name), or in the columns named in `narrow`, shown in a narrow box only (`.narrow-col`;
 * the trace list: the message with the rest of the row under it), and a row's buttons one under the other. Wide or
 * narrow is the table's own box (`.table-scroll-wide`, a size container, styles.css), not the window's. A box that
 * scrolls takes Tab, named by the table's label, so the keyboard can scroll it too (`ScrollBox`): a table with no
 * button in it (the delivery log) could not be scrolled sideways without a mouse or a touch.
 */
export function ListTable<T>({
  label,
  className,
  items,
  loading,
  empty,
  columns,
  numeric = [],
  wide = [],
  narrow = [],
  headers = {},
  actions,
  row,
}: {
  label: string;
  className?: string;
  items: readonly T[] | undefined;
  loading?: boolean;
  empty: ReactNode;
  columns: readonly string[];
  numeric?: readonly string[];
  wide?: readonly string[];
  narrow?: readonly string[];
  /** what a column's header shows, when not its name alone (the attempt table's Compare: its name for screen readers only in a narrow box) */
  headers?: Readonly<Record<string, ReactNode>>;
  actions?: boolean;
  row: (item: T, index: number) => ReactNode;
}) {
  if (!items)
    return loading ? (
      <p className="muted" role="status" aria-label={`${label}: loading`}>
        Loading…
      </p>
    ) : null;
  if (items.length === 0) return <p className="empty">{empty}</p>;
  // a table wider than the window scrolls sideways inside its own box, not the whole page
  return (
    <ScrollBox className={wide.length || narrow.length ? 'table-scroll table-scroll-wide' : 'table-scroll'} label={label}>
      <table className={['table', actions ? 'has-actions' : '', className ?? ''].filter(Boolean).join(' ')} aria-label={label}>
        <thead>
          <tr>
            {columns.map((c) => (
              <th key={c} scope="col" className={[numeric.includes(c) ? 'num' : '', wide.includes(c) ? 'wide-only' : '', narrow.includes(c) ? 'narrow-col' : ''].filter(Boolean).join(' ') || undefined}>
                {headers[c] ?? c}
              </th>
            ))}
            {actions ? (
              <th scope="col">
                <span className="sr-only">Actions</span>
              </th>
            ) : null}
          </tr>
        </thead>
        <tbody>{items.map(row)}</tbody>
      </table>
    </ScrollBox>
  );
}

/** The table's box: while it scrolls, a stop of the Tab order (arrow keys then scroll it), named as its table. */
function ScrollBox({ className, label, children }: { className: string; label: string; children: ReactNode }) {
  const [ref, scrolls] = useScrolls<HTMLDivElement>();
  const focusable = scrolls ? { tabIndex: 0, role: 'group', 'aria-label': label } : {};
  return (
    <div ref={ref} className={className} {...focusable}>
      {children}
    </div>
  );
}
