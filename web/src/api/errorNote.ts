/**
 * What the board says under an error's own message: which service, and what to do about it or what happens next.
 * ErrorMessage and the toasts (showError) both add it, so a screen's error and an action's toast say the same.
 */
import { ApiError, SERVICE_KEY_REFUSED, type Service } from './client';
import { isUnavailable, SERVICE_NAMES, unavailableNote } from './unavailable';

/** The setting of the task service's host that holds the X-API-Key it sends each proxied service (.env.example). */
export const SERVICE_KEY_SETTINGS: Record<Exclude<Service, 'task'>, string> = {
  scheduler: 'ARMADA_SCHEDULER_API_KEY',
  agents: 'ARMADA_AGENTS_API_KEY',
  traces: 'ARMADA_TRACES_API_KEY',
};

/**
 * The note of `err`, or null when its message says it all (a 404, a validation error). `retried`: a screen's read,
 * which is sent again by itself while its service is down; an action the user took (a save, a row's button) is not.
 */
export function errorNote(err: unknown, retried = true): string | null {
  if (!(err instanceof ApiError)) return null;
  if (isUnavailable(err as unknown)) return unavailableNote(err, retried);
  const who = SERVICE_NAMES[err.service];
  if (err.code === SERVICE_KEY_REFUSED && err.service !== 'task') {
    return `${who} refused the key the task service sends it (HTTP 401): the key of this tab is fine. On the task service's host, set ${SERVICE_KEY_SETTINGS[err.service]} (or ARMADA_API_KEY, which the three services share) to the key that service expects, and restart Armada.`;
  }
  if (err.status === 403) return `${who} refused this request to the key this tab sends (HTTP 403): use a key that is allowed to do it (Settings, API key).`;
  if (err.status >= 500) return `${who} failed on this request (HTTP ${err.status}): its log on the server says why.`;
  return null;
}

/** A few words for a list an error left empty ("Not loaded: …"), the error itself being said above it. */
export function notLoadedReason(err: unknown): string {
  if (!(err instanceof ApiError)) return 'it could not be read';
  const who = SERVICE_NAMES[err.service].replace(/^The /, 'the ');
  if (isUnavailable(err as unknown)) return err.status === 0 ? 'the Armada server did not answer' : `${who} is unavailable`;
  if (err.code === SERVICE_KEY_REFUSED) return `${who} refused the task service's key`;
  if (err.status === 401) return 'this server needs an API key';
  if (err.status === 403) return `${who} refused the request`;
  return `${who} answered HTTP ${err.status}`;
}
