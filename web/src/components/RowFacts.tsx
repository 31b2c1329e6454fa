import { Fragment, type ReactNode } from 'react';

/**
 * One fact of a table row: its name (muted; none for a badge, which says itself: one such fact a row) and its value.
 * A fact stays on one line ("Queued 2"); one with `wraps` (a date, an address, a list) wraps inside the cell, which it
 * would widen else.
 */
export interface RowFact {
  name?: string;
  value: ReactNode;
  wraps?: boolean;
}

/** The longest part of a wrapping fact kept on one line (as `Name` keeps a name's words). */
const WHOLE_UP_TO = 24;

/**
 * A wrapping fact's text, wrapped between its comma-separated parts rather than inside one: a date and its time
 * ("11/30/2026, 11:53:32 PM" wrapped before "PM"), a list of events or tasks; a part longer than WHOLE_UP_TO wraps
 * where it must.
 */
function Parts({ text }: { text: string }) {
  const parts = text.split(', ');
  return (
    <>
      {parts.map((part, i) => (
        // biome-ignore lint/suspicious/noArrayIndexKey: the parts of one fixed string, in their order
        <Fragment key={i}>
          {i > 0 ? ', ' : null}
          <span className={part.length <= WHOLE_UP_TO ? 'nowrap' : undefined}>{part}</span>
        </Fragment>
      ))}
    </>
  );
}

/**
 * What a narrow table box shows under a row's main text instead of the columns it hides (ListTable's `wide`): the
 * row's other facts, "name value", side by side and wrapping between them (`.row-facts`, styles.css), then `children`
 * (a longer text: an error, a description). Shown in a narrow box only (`.narrow-only`), unless `always` (inside a
 * column that a narrow box alone shows, ListTable's `narrow`). Approvals, the Scheduler's lists, Agents, the trace
 * list, Settings' webhooks and a task's attempts (Projects' stats the same way, `.project-stats`): each row then reads
 * top to bottom, and none scrolls sideways under its pinned buttons.
 */
export function RowFacts({ label, facts, always, children }: { label: string; facts: readonly (RowFact | null)[]; always?: boolean; children?: ReactNode }) {
  const list = (
    <ul className="row-facts" aria-label={label}>
      {facts.map((f) =>
        f ? (
          <li key={f.name ?? 'badge'} className={f.wraps ? 'wraps' : undefined}>
            {f.name ? <span className="muted">{f.name}</span> : null}
            {f.name ? ' ' : null}
            {f.wraps && typeof f.value === 'string' ? <Parts text={f.value} /> : f.value}
          </li>
        ) : null,
      )}
    </ul>
  );
  return always ? (
    <>
      {list}
      {children}
    </>
  ) : (
    <div className="narrow-only">
      {list}
      {children}
    </div>
  );
}
