import type { ReactNode } from 'react';
import { Link } from 'react-router';
import { useDocumentTitle } from '../components';

/**
 * The board's not-found screen: an address with no screen (`/nope`), or a screen's address whose project or task does
 * not exist (deleted, or mistyped). Said once, with a way back to the projects and nothing to act on; the tab's title
 * says it too ("Not found · Armada").
 */
export function NotFoundPage({ title = 'Not found', children = 'There is no screen at this address.' }: { title?: string; children?: ReactNode }) {
  useDocumentTitle(title);
  return (
    <section>
      {/* in a screen's head, as the other screens' titles: alone, it stood 4 px higher than theirs */}
      <div className="page-head">
        <h1>{title}</h1>
      </div>
      <p>
        {children} <Link to="/projects">Go to the projects</Link>.
      </p>
    </section>
  );
}
