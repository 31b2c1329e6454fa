import { ApiError, SERVICE_KEY_REFUSED } from '../api';
import { errorNote } from '../api/errorNote';

/**
 * An inline error: of a screen's read (a query), with a retry button when given, or of an `action` the user took (a
 * save, a delete, in its dialog). Under the message, what to do or what happens next (api/errorNote.ts): a service
 * that is down is named, a read being tried again by itself and an action not; a proxied service that refused the
 * task service's key names the setting to fix; a 500 points at the server's log. `subject` says what failed when the
 * screen has more than one thing that can ("Sources and Executions could not be read").
 */
export function ErrorMessage({ error, onRetry, action, subject }: { error: unknown; onRetry?: () => void; action?: boolean; subject?: string }) {
  const note = errorNote(error, !action);
  return (
    <div className="banner banner-error" role="alert">
      <div className="banner-text">
        <span>
          {subject ? <strong>{subject}: </strong> : null}
          {error instanceof Error ? error.message : String(error)}
        </span>
        {note ? <span className="banner-note">{note}</span> : null}
        {/* the key prompt was closed without a key (or with a refused one): say how to get it back */}
        {error instanceof ApiError && error.status === 401 && error.code !== SERVICE_KEY_REFUSED && onRetry ? (
          <span className="banner-note">This server needs an API key: Retry asks for it.</span>
        ) : null}
      </div>
      {onRetry ? (
        <button type="button" onClick={onRetry}>
          Retry
        </button>
      ) : null}
    </div>
  );
}
