import { ApiError, isUnavailable, unavailableNote } from '../api';

/**
 * An inline error: of a screen's read (a query), with a retry button when given, or of an `action` the user took (a
 * save, a delete, in its dialog). A service that is down (503, no answer) is named, with what happens next: a read is
 * tried again by itself, an action is not (api/unavailable.ts).
 */
export function ErrorMessage({ error, onRetry, action }: { error: unknown; onRetry?: () => void; action?: boolean }) {
  return (
    <div className="banner banner-error" role="alert">
      <div className="banner-text">
        <span>{error instanceof Error ? error.message : String(error)}</span>
        {isUnavailable(error) ? <span className="banner-note">{unavailableNote(error, !action)}</span> : null}
        {/* the key prompt was closed without a key (or with a refused one): say how to get it back */}
        {error instanceof ApiError && error.status === 401 && onRetry ? <span className="banner-note">This server needs an API key: Retry asks for it.</span> : null}
      </div>
      {onRetry ? (
        <button type="button" onClick={onRetry}>
          Retry
        </button>
      ) : null}
    </div>
  );
}
