/** Workflow ids and defaults of a project's managed clone, shared by the API that starts the workflows and the workflows. */

/** cloneProjectWorkflow of a project (one per project). */
export const cloneProjectWorkflowId = (projectId: string): string => `project-clone:${projectId}`;

/** removeProjectCloneWorkflow of a deleted project. */
export const removeProjectCloneWorkflowId = (projectId: string): string => `project-clone-remove:${projectId}`;

/**
 * The clone activity's heartbeat timeout (config `projects.cloneHeartbeatTimeoutMs`, default 1 minute): how soon a try
 * whose worker died is timed out and tried again. Also what cloneProjectWorkflow takes when its input names none.
 */
export const CLONE_HEARTBEAT_TIMEOUT_MS = 60_000;

/** The pause before a failed clone's second try (config `projects.cloneRetryInitialIntervalMs`, default 2 s). */
export const CLONE_RETRY_INITIAL_INTERVAL_MS = 2_000;
