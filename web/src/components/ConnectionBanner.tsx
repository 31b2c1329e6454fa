import { type LostStream, SERVICE_NAMES, type Service, useLostStreams } from '../api';

/** "the task service and the scheduler service": the services of the lost streams, in the order they were lost. */
function serviceList(lost: readonly LostStream[]): string {
  const names = [...new Set<Service>(lost.map((s) => s.service))].map((s) => SERVICE_NAMES[s].replace(/^The /, 'the '));
  return names.length > 1 ? `${names.slice(0, -1).join(', ')} and ${names.at(-1)}` : (names[0] ?? 'the task service');
}

/**
 * Shown while a live stream is down; it goes away when the stream is back. It names the service whose live updates
 * stopped, what on the screen is not updating since when, and what to check if it lasts (before: only "Connection
 * lost — reconnecting…", which said neither what nor where).
 */
export function ConnectionBanner() {
  const lost = useLostStreams();
  if (lost.length === 0) return null;
  const what = [...new Set(lost.map((s) => s.what))].join(', ');
  const since = new Date(Math.min(...lost.map((s) => s.since))).toLocaleTimeString();
  return (
    <div className="banner banner-warning" role="status" data-testid="connection-banner">
      <div className="banner-text">
        <strong>Live updates from {serviceList(lost)} lost — reconnecting…</strong>
        <span className="banner-note">
          Not updating since {since}: {what}. What this screen shows may be out of date until they are back; it catches up by itself then, with no reload.
        </span>
        <span className="banner-note">
          If this lasts, check that Armada is running (<code>armada status</code> on its host) and that this browser can reach it; behind a reverse proxy, that the
          proxy passes WebSocket upgrades on <code>/ws</code> and streamed answers on <code>/api/events</code>.
        </span>
      </div>
    </div>
  );
}
