import { dismissToast, type ToastItem, useToasts } from './toastStore';

/**
 * The toast area: API errors with their message and, for a service that is down, its note (each its own
 * role=alert, which a screen reader says as it appears), and notices, in one polite live region (role=status) that is
 * always on the page: a region added together with its text is not read by every screen reader, and each notice was
 * such a region.
 */
export function Toasts() {
  const toasts = useToasts();
  return (
    <div className="toasts">
      {toasts
        .filter((t) => t.kind === 'error')
        .map((t) => (
          <Toast key={t.id} toast={t} role="alert" />
        ))}
      <div className="toast-notices" role="status">
        {toasts
          .filter((t) => t.kind !== 'error')
          .map((t) => (
            <Toast key={t.id} toast={t} />
          ))}
      </div>
    </div>
  );
}

function Toast({ toast: t, role }: { toast: ToastItem; role?: 'alert' }) {
  return (
    <div className={`toast toast-${t.kind}`} role={role}>
      <div className="banner-text">
        <span>{t.message}</span>
        {t.note ? <span className="banner-note">{t.note}</span> : null}
      </div>
      <button type="button" className="icon-button" aria-label="Dismiss" onClick={() => dismissToast(t.id)}>
        <span aria-hidden="true">×</span>
      </button>
    </div>
  );
}
