import { dismissToast, useToasts } from './toastStore';

/** The toast area: API errors with their message and, for a service that is down, its note (role=alert), notices (role=status). */
export function Toasts() {
  const toasts = useToasts();
  return (
    <div className="toasts">
      {toasts.map((t) => (
        <div key={t.id} className={`toast toast-${t.kind}`} role={t.kind === 'error' ? 'alert' : 'status'}>
          <div className="banner-text">
            <span>{t.message}</span>
            {t.note ? <span className="banner-note">{t.note}</span> : null}
          </div>
          <button type="button" className="icon-button" aria-label="Dismiss" onClick={() => dismissToast(t.id)}>
            ×
          </button>
        </div>
      ))}
    </div>
  );
}
