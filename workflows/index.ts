/** Every workflow the Armada worker runs. Workflow code is deterministic and does no I/O. */
export { cloneProjectWorkflow } from './cloneProjectWorkflow';
export { removeProjectCloneWorkflow } from './removeProjectCloneWorkflow';
export { agentWorkflow } from './agentWorkflow';
export { agentTaskWorkflow } from './agentTaskWorkflow';
export { approvalWorkflow } from './approvalWorkflow';
export { followUpDraftWorkflow, followUpQueueWorkflow } from './followUpWorkflows';
export { webhookDeliveryWorkflow } from './webhookDeliveryWorkflow';
export { pullRequestWatchWorkflow } from './pullRequestWatchWorkflow';
export { workflowRunWorkflow } from './workflowRunWorkflow';
export { schedulerMaintenanceWorkflow } from './schedulerMaintenanceWorkflow';
export { attemptWorkflow } from './attemptWorkflow';
export { mergeWorkflow, removeAttemptWorkflow } from './mergeWorkflow';
export { hostReadWorkflow } from './hostReadWorkflow';
export { pushBranchWorkflow } from './pushBranchWorkflow';
