/**
 * Every workflow the Armada worker runs. Workflow code is deterministic and does no I/O.
 *
 * Each export loads its module when a run first calls it. The SDK's reusable V8 context gives every run its own copy
 * of the bundle's modules (their state is the run's), evaluated as the run first requires them: with plain re-exports
 * every run evaluated every workflow's modules in its first workflow task; now a run evaluates only its own workflow's
 * (about 0.8 ms less in a scheduled run's first workflow task on the 2-core VM: docs/benchmarks.md#scheduler).
 */
/** A workflow function of module `M`, required at its first call (by the workflow bundle's require). */
function lazy<M, K extends keyof M & string>(load: () => M, name: K): M[K] {
  const fn = (...args: unknown[]) => (load()[name] as (...a: unknown[]) => unknown)(...args);
  Object.defineProperty(fn, 'name', { value: name });
  return fn as M[K];
}

type CloneProject = typeof import('./cloneProjectWorkflow');
type RemoveProjectClone = typeof import('./removeProjectCloneWorkflow');
type Agent = typeof import('./agentWorkflow');
type AgentTask = typeof import('./agentTaskWorkflow');
type Approval = typeof import('./approvalWorkflow');
type FollowUps = typeof import('./followUpWorkflows');
type WebhookDelivery = typeof import('./webhookDeliveryWorkflow');
type PullRequestWatch = typeof import('./pullRequestWatchWorkflow');
type WorkflowRun = typeof import('./workflowRunWorkflow');
type SchedulerMaintenance = typeof import('./schedulerMaintenanceWorkflow');
type Attempt = typeof import('./attemptWorkflow');
type Merge = typeof import('./mergeWorkflow');
type HostRead = typeof import('./hostReadWorkflow');
type PushBranch = typeof import('./pushBranchWorkflow');

export const cloneProjectWorkflow = lazy((): CloneProject => require('./cloneProjectWorkflow'), 'cloneProjectWorkflow');
export const removeProjectCloneWorkflow = lazy((): RemoveProjectClone => require('./removeProjectCloneWorkflow'), 'removeProjectCloneWorkflow');
export const agentWorkflow = lazy((): Agent => require('./agentWorkflow'), 'agentWorkflow');
export const agentTaskWorkflow = lazy((): AgentTask => require('./agentTaskWorkflow'), 'agentTaskWorkflow');
export const approvalWorkflow = lazy((): Approval => require('./approvalWorkflow'), 'approvalWorkflow');
export const followUpDraftWorkflow = lazy((): FollowUps => require('./followUpWorkflows'), 'followUpDraftWorkflow');
export const followUpQueueWorkflow = lazy((): FollowUps => require('./followUpWorkflows'), 'followUpQueueWorkflow');
export const webhookDeliveryWorkflow = lazy((): WebhookDelivery => require('./webhookDeliveryWorkflow'), 'webhookDeliveryWorkflow');
export const pullRequestWatchWorkflow = lazy((): PullRequestWatch => require('./pullRequestWatchWorkflow'), 'pullRequestWatchWorkflow');
export const workflowRunWorkflow = lazy((): WorkflowRun => require('./workflowRunWorkflow'), 'workflowRunWorkflow');
export const schedulerMaintenanceWorkflow = lazy((): SchedulerMaintenance => require('./schedulerMaintenanceWorkflow'), 'schedulerMaintenanceWorkflow');
export const attemptWorkflow = lazy((): Attempt => require('./attemptWorkflow'), 'attemptWorkflow');
export const mergeWorkflow = lazy((): Merge => require('./mergeWorkflow'), 'mergeWorkflow');
export const removeAttemptWorkflow = lazy((): Merge => require('./mergeWorkflow'), 'removeAttemptWorkflow');
export const hostReadWorkflow = lazy((): HostRead => require('./hostReadWorkflow'), 'hostReadWorkflow');
export const pushBranchWorkflow = lazy((): PushBranch => require('./pushBranchWorkflow'), 'pushBranchWorkflow');
