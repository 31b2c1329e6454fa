import { isUnavailable, unavailableNote } from '../api';

/**
 * An inline error in a screen (a query that failed): the server's message, and a retry button when given. A service
 * that is down (503, no answer) is named, with the word that the screen tries again by itself (api/unavailable.ts).
 */
export function ErrorMessage({ error, onRetry }: { error: unknown; onRetry?: () => void }) {
  return (
    <div className="banner banner-error" role="alert">
      <div className="banner-text">
        <span>{error instanceof Error ? error.message : String(error)}</span>
        {isUnavailable(error) ? <span className="banner-note">{unavailableNote(error)}</span> : null}
      </div>
      {onRetry ? (
        <button type="button" onClick={onRetry}>
          Retry
        </button>
      ) : null}
    </div>
  );
}
