/**
 * The task service key the user typed in the key prompt, kept in sessionStorage (one tab session, never
 * localStorage). Listeners are told when the API answered 401 so the app shows the prompt.
 */
const STORAGE_KEY = 'armada.apiKey';

type Listener = () => void;
const unauthorizedListeners = new Set<Listener>();
/** Set by a 401, cleared by a new key: streams wait instead of retrying a key the server refuses. */
let refused = false;
const keyListeners = new Set<Listener>();

export function getApiKey(): string | null {
  try {
    return sessionStorage.getItem(STORAGE_KEY);
  } catch {
    return null;
  }
}

export function setApiKey(key: string | null): void {
  refused = false;
  if (key) sessionStorage.setItem(STORAGE_KEY, key);
  else sessionStorage.removeItem(STORAGE_KEY);
  for (const l of keyListeners) l();
}

/** Called by the API client on a 401: the stored key (if any) is wrong or missing. */
export function reportUnauthorized(): void {
  refused = true;
  for (const l of unauthorizedListeners) l();
}

export function onUnauthorized(listener: Listener): () => void {
  unauthorizedListeners.add(listener);
  return () => unauthorizedListeners.delete(listener);
}

/** Called whenever the key changes (streams reconnect with the new key). */
export function onKeyChange(listener: Listener): () => void {
  keyListeners.add(listener);
  return () => keyListeners.delete(listener);
}

/** Whether the server refused the current key (or its absence) and no new key was entered since. */
export function isKeyRefused(): boolean {
  return refused;
}
