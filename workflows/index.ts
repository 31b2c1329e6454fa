/** Every workflow the Armada worker runs. Workflow code is deterministic and does no I/O. */
export { cloneProjectWorkflow } from './cloneProjectWorkflow';
export { attemptWorkflow } from './attemptWorkflow';
export { mergeWorkflow, removeAttemptWorkflow } from './mergeWorkflow';
