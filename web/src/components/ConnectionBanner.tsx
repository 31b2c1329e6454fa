import { useConnectionLost } from '../api';

/** Shown while a live stream is down; it goes away when the stream is back. */
export function ConnectionBanner() {
  const lost = useConnectionLost();
  if (!lost) return null;
  return (
    <div className="banner banner-warning" role="status">
      Connection lost — reconnecting…
    </div>
  );
}
