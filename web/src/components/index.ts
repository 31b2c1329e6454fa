/** Shared pieces of every screen. */
export { ConfirmDialog } from './ConfirmDialog';
export { ConnectionBanner } from './ConnectionBanner';
export { Dialog } from './Dialog';
export { useDocumentTitle } from './documentTitle';
export { ErrorMessage } from './ErrorMessage';
export { groupErrors, joinNames, type NamedRead, NotLoaded, ScreenErrors } from './ScreenErrors';
export { KeyPrompt } from './KeyPrompt';
export { Layout } from './Layout';
export { Toasts } from './Toasts';
export { dismissToast, showError, showToast } from './toastStore';
export { Placeholder } from './Placeholder';
export { Field } from './Field';
export { ListTable } from './ListTable';
export { Name } from './Name';
export { type RowFact, RowFacts } from './RowFacts';
export { formatCost } from './money';
export { formatDuration, parseSchedulerDuration } from './duration';
export { useScrolls } from './scrollBox';
