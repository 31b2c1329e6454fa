/**
 * A modal dialog on the native <dialog> element: showModal() makes the page behind inert (focus stays inside),
 * Escape closes it (onClose), and the control marked `data-autofocus` (else the first focusable one) gets focus. Put a
 * <form> inside so Enter submits. Closed, it gives focus back to the control that had it when it opened; when that
 * control is gone (the row a Delete removed, the bulk bar an emptied selection hides), to the screen (`#main`), so the
 * next Tab goes on inside it (focus fell to <body>, and Tab started again at the top of the page).
 */
import { type ReactNode, useEffect, useId, useRef } from 'react';

const FOCUSABLE = 'button, [href], input, select, textarea, [tabindex]:not([tabindex="-1"])';

export interface DialogProps {
  open: boolean;
  title: string;
  onClose: () => void;
  children: ReactNode;
  className?: string;
}

export function Dialog({ open, title, onClose, children, className }: DialogProps) {
  const ref = useRef<HTMLDialogElement>(null);
  const titleId = useId();
  // while open: what had focus when it opened
  const opened = useRef<{ opener: Element | null } | null>(null);
  useEffect(() => {
    const d = ref.current;
    if (!d) return;
    if (open && !d.open) {
      opened.current = { opener: document.activeElement };
      d.showModal();
      // React's autoFocus runs before the dialog is shown; a closed <dialog>'s controls cannot take focus
      d.querySelector<HTMLElement>('[data-autofocus]')?.focus();
    }
    if (!open && d.open) {
      d.close();
      giveFocusBack(opened.current?.opener ?? null);
      opened.current = null;
    }
  }, [open]);
  // a dialog its screen renders only while open (`<Dialog open …>`) is closed by going away: the same
  useEffect(() => {
    const d = ref.current;
    return () => {
      // after the commit: React's development double run of effects unmounts nothing (the dialog is still there)
      queueMicrotask(() => {
        if (!opened.current || d?.isConnected) return;
        giveFocusBack(opened.current.opener);
        opened.current = null;
      });
    };
  }, []);
  return (
    <dialog
      ref={ref}
      className={`dialog ${className ?? ''}`}
      aria-labelledby={titleId}
      onKeyDown={(e) => {
        // the page behind is inert; Tab also wraps around inside instead of leaving for the browser's own controls
        if (e.key !== 'Tab') return;
        const focusable = [...e.currentTarget.querySelectorAll<HTMLElement>(FOCUSABLE)].filter((el) => !el.hasAttribute('disabled'));
        const first = focusable[0];
        const last = focusable[focusable.length - 1];
        if (!first || !last) return;
        if (e.shiftKey && document.activeElement === first) {
          e.preventDefault();
          last.focus();
        } else if (!e.shiftKey && document.activeElement === last) {
          e.preventDefault();
          first.focus();
        }
      }}
      onCancel={(e) => {
        e.preventDefault();
        onClose();
      }}
    >
      {open ? (
        <>
          <h2 id={titleId} className="dialog-title">
            {title}
          </h2>
          {children}
        </>
      ) : null}
    </dialog>
  );
}

/** Focus back on `opener`, or on the screen (#main) when it is gone or cannot take focus (disabled, hidden). */
function giveFocusBack(opener: Element | null): void {
  if (opener instanceof HTMLElement && opener.isConnected && opener !== document.body) opener.focus();
  if (!(opener instanceof HTMLElement) || document.activeElement !== opener) document.getElementById('main')?.focus();
}
