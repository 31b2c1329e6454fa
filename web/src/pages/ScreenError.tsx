import { Link, useRouteError } from 'react-router';
import { useDocumentTitle } from '../components';

/** A screen's code that did not arrive: the lazy chunk's import failed (the server went away, or a new build replaced it). */
function isChunkLoadFailure(err: unknown): boolean {
  return err instanceof Error && /dynamically imported module|Importing a module script failed|error loading dynamically imported module/i.test(err.message);
}

/**
 * What a screen that failed shows in its place, under the navigation (which keeps working): its code could not be
 * fetched (the screens other than Projects and Board load on first visit), or it threw. It says which, and offers a
 * reload; before, React Router's bare "Unexpected Application Error!" page replaced the whole board.
 */
export function ScreenError() {
  const err = useRouteError();
  const chunk = isChunkLoadFailure(err);
  const title = chunk ? 'This screen could not be loaded' : 'This screen failed';
  useDocumentTitle(title);
  return (
    <section>
      <h1>{title}</h1>
      <div className="banner banner-error" role="alert">
        <div className="banner-text">
          <span>
            {chunk
              ? 'Its code did not arrive from the Armada server: the server did not answer, or was updated since this page was opened.'
              : `It stopped on an error: ${err instanceof Error ? err.message : String(err)}`}
          </span>
          <span className="banner-note">Reload the page to try again; the other screens stay reachable from the navigation.</span>
        </div>
        <button type="button" onClick={() => window.location.reload()}>
          Reload
        </button>
      </div>
      <p>
        <Link to="/projects">Go to the projects</Link>.
      </p>
    </section>
  );
}
