/** The names of the branches Armada creates for attempts: `<branchPrefix>/task-<taskId>-attempt-<n>`. */

const escapeRe = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** Matches a managed branch name; group 1 is the task id, group 2 the attempt number. */
export const managedBranchPattern = (prefix: string) => new RegExp(`^${escapeRe(prefix)}/task-(.+)-attempt-(\\d+)$`);
