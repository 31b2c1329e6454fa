import { Dialog } from './Dialog';
import { ErrorMessage } from './ErrorMessage';

export interface ConfirmDialogProps {
  open: boolean;
  title: string;
  message: string;
  confirmLabel: string;
  danger?: boolean;
  busy?: boolean;
  /** the failed confirm, shown in the dialog (a toast would sit under the modal's backdrop, dimmed and out of reach) */
  error?: unknown;
  onConfirm: () => void;
  onCancel: () => void;
}

/** "Are you sure?": Enter confirms (the confirm button has focus), Escape or Cancel closes; a failure shows inside. */
export function ConfirmDialog({ open, title, message, confirmLabel, danger, busy, error, onConfirm, onCancel }: ConfirmDialogProps) {
  return (
    <Dialog open={open} title={title} onClose={onCancel}>
      <form
        method="dialog"
        onSubmit={(e) => {
          e.preventDefault();
          onConfirm();
        }}
      >
        <p>{message}</p>
        {error ? <ErrorMessage error={error} action /> : null}
        <div className="dialog-actions">
          <button type="button" onClick={onCancel}>
            Cancel
          </button>
          <button type="submit" className={danger ? 'danger' : 'primary'} data-autofocus disabled={busy}>
            {confirmLabel}
          </button>
        </div>
      </form>
    </Dialog>
  );
}
