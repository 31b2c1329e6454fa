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
  const opener = useRef<HTMLElement | null>(null);
  useEffect(() => {
    const d = ref.current;
    if (!d) return;
    if (open && !d.open) {
      opener.current = document.activeElement instanceof HTMLElement ? document.activeElement : null;
      d.showModal();
      // React's autoFocus runs before the dialog is shown; a closed <dialog>'s controls cannot take focus
      d.querySelector<HTMLElement>('[data-autofocus]')?.focus();
    }
    if (!open && d.open) {
      d.close();
      const back = opener.current;
      opener.current = null;
      if (back?.isConnected) back.focus();
      // gone, or no longer focusable (disabled, hidden)
      if (!back || document.activeElement !== back) document.getElementById('main')?.focus();
    }
  }, [open]);
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
