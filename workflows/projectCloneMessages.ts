/** Workflow ids of a project's managed clone, shared by the API that starts the workflows and the workflows. */

/** cloneProjectWorkflow of a project (one per project). */
export const cloneProjectWorkflowId = (projectId: string): string => `project-clone:${projectId}`;

/** removeProjectCloneWorkflow of a deleted project. */
export const removeProjectCloneWorkflowId = (projectId: string): string => `project-clone-remove:${projectId}`;
