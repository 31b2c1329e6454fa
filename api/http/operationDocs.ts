/**
 * The operationId, one-line summary and description of every documented route of the four services, keyed by
 * `METHOD /openapi/path`. Applied by the document transform (api/http/openapi.ts); a value a route's own schema
 * declares wins. Contract: operationIds are camelCase verb + noun, unique per document and stable — MCP tool names
 * (`armada tools openapi`, `armada tools serve`) derive from them, so renaming one renames a tool.
 */
import type { ServiceKind } from './openapi';

export interface OperationDoc {
  operationId: string;
  summary: string;
  description: string;
}

type Catalogue = Record<string, [operationId: string, summary: string, description: string]>;

const TASK: Catalogue = {
  'GET /api/projects': ['listProjects', 'List projects', 'Every project (a git repository Armada runs tasks in), newest first.'],
  'POST /api/projects': ['createProject', 'Create a project', 'Registers a git repository (local path or URL) as a project; answers 201 with the project.'],
  'GET /api/projects/{id}': ['getProject', 'Get a project', 'One project by id; 404 when it does not exist.'],
  'PATCH /api/projects/{id}': ['updateProject', 'Update a project', 'Changes the given fields of a project and returns it.'],
  'DELETE /api/projects/{id}': ['deleteProject', 'Delete a project', 'Deletes a project and what belongs to it.'],
  'GET /api/projects/{id}/stats': ['getProjectStats', 'Get project statistics', 'Task counts of a project by status.'],
  'GET /api/tasks': ['listTasks', 'List tasks', 'A page of tasks, filtered by project, status, priority or label.'],
  'POST /api/tasks': ['createTask', 'Create a task', 'Creates a pending task in a project; answers 201 with the task.'],
  'GET /api/projects/{id}/tasks': ['listProjectTasks', 'List the tasks of a project', 'A page of the tasks of one project.'],
  'GET /api/tasks/{id}': ['getTask', 'Get a task', 'One task with its attempts and statistics; 404 when it does not exist.'],
  'PATCH /api/tasks/{id}': ['updateTask', 'Update a task', 'Changes the given fields of a task (title, description, status, priority, labels) and returns it.'],
  'DELETE /api/tasks/{id}': ['deleteTask', 'Delete a task', 'Deletes a task and its attempts.'],
  'POST /api/tasks/bulk/update': ['bulkUpdateTasks', 'Update many tasks', 'Applies the same change to a list of tasks in one request.'],
  'POST /api/tasks/bulk/delete': ['bulkDeleteTasks', 'Delete many tasks', 'Deletes a list of tasks in one request.'],
  'GET /api/approvals/pending': ['listPendingApprovals', 'List pending approvals', 'The approval requests still waiting for an answer from the current user.'],
  'GET /api/approvals/history': ['listApprovalHistory', 'List closed approvals', 'The closed approval requests (approved, rejected, expired, cancelled) the current user requested, answered or could answer, latest decided first.'],
  'POST /api/approvals': ['createApproval', 'Request an approval', 'Creates an approval request (its approval workflow waits for the answer). A 503 with `details.outcome: "unknown"` (the database ended or stopped answering during the commit) names the request in `details.approvalId`: read it, a 404 means it was not stored and may be sent again. Any other 503 (Temporal unreachable, its answer to the start lost, or no answer within `ARMADA_API_TEMPORAL_IN_TRANSACTION_TIMEOUT_MS`, default 10 s) stored nothing: send it again.'],
  'GET /api/approvals/{id}': ['getApproval', 'Get an approval', 'One approval request with its status and response.'],
  'POST /api/approvals/{id}/respond': ['respondToApproval', 'Answer an approval', 'Approves or rejects a pending approval request; the waiting workflow continues. A worker applies the response: when none does within `approvals.workerWaitMs` (default 15 s; no worker running), 503 with `Retry-After` and `details.outcome: "recorded"`: the response is recorded in the approval\'s workflow and applied when a worker comes, unless the approval is closed first (`details.outcome: "unknown"` instead when Temporal did not confirm recording it: read the approval, and send it again while it is pending). The same request sent again is recorded once and applied at most once; once the response is applied, sending one again is a 409.'],
  'POST /api/approvals/{id}/cancel': ['cancelApproval', 'Cancel an approval', 'Withdraws a pending approval request. A worker applies the cancel: when none does within `approvals.workerWaitMs` (default 15 s; no worker running), 503 with `Retry-After` and `details.outcome: "recorded"`: the cancel is recorded in the approval\'s workflow and applied when a worker comes, unless the approval is closed first (`details.outcome: "unknown"` instead when Temporal did not confirm recording it: read the approval, and send it again while it is pending). Sent again it is recorded once and applied at most once; once applied, a 409 (the request is cancelled).'],
  'GET /api/task-templates': ['listTaskTemplates', 'List task templates', 'A page of task templates, filtered by category or name.'],
  'POST /api/task-templates': ['createTaskTemplate', 'Create a task template', 'Saves a reusable task template; answers 201 with it.'],
  'GET /api/task-templates/{id}': ['getTaskTemplate', 'Get a task template', 'One task template by id.'],
  'PUT /api/task-templates/{id}': ['replaceTaskTemplate', 'Replace a task template', 'Replaces a task template with the given one.'],
  'DELETE /api/task-templates/{id}': ['deleteTaskTemplate', 'Delete a task template', 'Deletes a task template; tasks made from it stay.'],
  'POST /api/task-templates/{id}/apply': ['applyTaskTemplate', 'Create tasks from a template', "Creates the template's tasks in a project, in order, in one transaction; answers 201."],
  'POST /api/task-attempts/{id}/drafts': ['saveAttemptDraft', 'Save a draft', 'Saves a draft (e.g. a follow-up prompt) on an attempt.'],
  'GET /api/task-attempts/{id}/drafts/{draftId}': ['getAttemptDraft', 'Get a draft', 'One draft of an attempt.'],
  'DELETE /api/task-attempts/{id}/drafts/{draftId}': ['deleteAttemptDraft', 'Delete a draft', 'Deletes a draft of an attempt.'],
  'POST /api/task-attempts/{id}/follow-up-draft': ['saveFollowUpDraft', 'Save a follow-up draft', 'Saves a follow-up prompt for an attempt; with autoSend it is sent to the attempt by a workflow.'],
  'POST /api/task-attempts/{id}/retry-follow-up-draft': ['createRetryDraft', 'Save a retry draft', 'Saves a retry prompt for an attempt; answers 201 with the draft.'],
  'DELETE /api/task-attempts/{id}/retry-follow-up-draft/{draftId}': ['deleteRetryDraft', 'Delete a retry draft', 'Deletes a retry draft of an attempt.'],
  'POST /api/task-attempts/{id}/follow-up-queue': ['queueFollowUps', 'Queue follow-ups', 'Queues follow-up prompts that run one after another on an attempt (a workflow per queue).'],
  'POST /api/task-attempts/{id}/draft-queue': ['queueDrafts', 'Queue drafts', 'Saves an ordered queue of drafts (title, description) on an attempt; answers 201.'],
  'POST /api/webhooks': ['createWebhook', 'Create a webhook', 'Registers a URL that receives task and attempt events; answers 201 with the webhook.'],
  'GET /api/webhooks': ['listWebhooks', 'List webhooks', 'Every registered webhook.'],
  'GET /api/webhooks/{id}': ['getWebhook', 'Get a webhook', 'One webhook by id.'],
  'DELETE /api/webhooks/{id}': ['deleteWebhook', 'Delete a webhook', 'Stops deliveries to a webhook and deletes it.'],
  'GET /api/webhooks/{id}/deliveries': ['listWebhookDeliveries', 'List webhook deliveries', 'The delivery attempts of a webhook with their status codes.'],
  'GET /api/filesystem/roots': ['listFilesystemRoots', 'List the browsable roots', 'The directories the filesystem endpoints may show that exist on the host: where browsing can start.'],
  'GET /api/filesystem/list': ['listDirectory', 'List a directory', 'The entries of a directory on the host (for picking a project folder).'],
  'GET /api/filesystem/git-repos': ['findGitRepos', 'Find git repositories', 'Git repositories found under a directory on the host.'],
  'POST /api/auth/codehost/device': ['startCodehostLogin', 'Start a code host login', 'Starts the code host device-flow login and returns the user code and verification URL.'],
  'POST /api/auth/codehost/device/poll': ['pollCodehostLogin', 'Poll a code host login', 'Checks whether the device-flow login has been completed.'],
  'POST /api/task-attempts/{id}/create-pr': ['createPullRequest', 'Open a pull request', 'Pushes the attempt branch and opens a pull request for it on the code host. An attempt with no changes (no commit on its branch beyond its base, or commits that together change nothing) is refused with 409 no_changes before anything is pushed.'],
  'POST /api/task-attempts/{id}/attach-pr': ['attachPullRequest', 'Attach a pull request', 'Links an existing pull request to an attempt.'],
  'GET /api/projects/{id}/codehost/repository': ['getCodehostRepository', 'Get the code host repository', 'The code host repository of a project.'],
  'GET /api/projects/{id}/codehost/pulls': ['listPullRequests', 'List pull requests', 'The pull requests of the project repository on the code host.'],
  'POST /api/projects/{id}/codehost/webhook': ['receiveCodehostEvent', 'Receive a code host event', 'The code host calls this webhook with repository events (e.g. a pull request merged).'],
  'POST /api/tasks/{id}/start': ['startTask', 'Start a task', 'Creates an attempt for the task and starts it (an agent works in a new worktree). With an `Idempotency-Key` header, repeats of the key with the same body (compared as canonical JSON: key order and white space do not count) return the first attempt; the key sent again with another body is a 422 `IDEMPOTENCY_KEY_REUSED` that starts nothing.'],
  'POST /api/tasks/{id}/cancel': ['cancelTask', 'Cancel a task', 'Cancels a task and its running attempts; answers with the ids of the cancelled attempts.'],
  'GET /api/tasks/{id}/attempts': ['listTaskAttempts', 'List the attempts of a task', 'Every attempt of one task, newest first.'],
  'GET /api/tasks/{id}/logs': ['getTaskLogs', 'Get task logs', 'The log lines of the attempts of a task as NDJSON, optionally of one attempt (attemptId) or level. Range and conditional headers are ignored (always a 200 with every line asked for, `Accept-Ranges: none`).'],
  'GET /api/attempts': ['listAttempts', 'List attempts', 'A page of attempts, filtered by task or status.'],
  'POST /api/attempts': ['createAttempt', 'Create an attempt', 'Creates an attempt of a task (not started yet); answers 201 with it.'],
  'POST /api/attempts/compare': ['compareAttempts', 'Compare attempts', 'Several attempts side by side (agent, status, results).'],
  'GET /api/attempts/{id}': ['getAttempt', 'Get an attempt', 'One attempt with its status, branch and worktree.'],
  'DELETE /api/attempts/{id}': ['deleteAttempt', 'Delete an attempt', 'Deletes an attempt.'],
  'POST /api/attempts/{id}/start': ['startTaskAttempt', 'Start an attempt', 'Starts the attempt workflow: worktree, agent run, result.'],
  'POST /api/attempts/{id}/cancel': ['cancelAttempt', 'Cancel an attempt', 'Cancels a running attempt and stops its processes.'],
  'GET /api/attempts/{id}/logs': ['getAttemptLogs', 'Get attempt logs', 'The output of the processes of an attempt. Range and conditional headers are ignored (always a 200 with every line asked for, `Accept-Ranges: none`).'],
  'GET /api/attempts/{id}/diff': ['getAttemptDiff', 'Get an attempt diff', 'The changes the attempt made on its branch, as a diff.'],
  'POST /api/attempts/{id}/merge': ['mergeAttempt', 'Merge an attempt', 'Merges the attempt branch into the base branch (after approval if one is required). A worker of the attempt\'s host runs the merge: when none finishes it within `attempts.mergeWaitMs` (default 60 s; no worker running), 503 with `Retry-After` and `details.outcome: "unknown"`: the merge was started and may still land when a worker comes (a merge sent meanwhile is a 409, already running; read the attempt\'s `merged`).'],
  'POST /api/task-attempts/{id}/merge': ['mergeTaskAttempt', 'Merge an attempt (task-attempts path)', 'The same merge as POST /api/attempts/{id}/merge under the task-attempts path.'],
  'POST /api/attempts/{id}/follow-up': ['sendFollowUp', 'Send a follow-up', 'Sends a follow-up prompt to an attempt; the agent continues in the same worktree. A 409 `CONFLICT` (`details.status`, the attempt\'s status) when its workflow is not running; the message says why (not started yet: start it first; still starting: send again in a few seconds; cancelled or finished with its workflow ended: start a new attempt). With an `Idempotency-Key` header (at most 200 characters, sent once), repeats of the key with the same body to the same attempt (also concurrent ones) run the follow-up once: the attempt\'s workflow drops a follow-up whose key it has already taken (it remembers its last 500 keys, across continue-as-new), and a repeat answers the same 202 as the first. The key sent again with another body (compared as canonical JSON) is a 422 `IDEMPOTENCY_KEY_REUSED`: nothing is sent. A 503 with `details.outcome: "unknown"` when Temporal took the follow-up and did not answer within `attempts.startTimeoutMs` (default 20 s), or its connection failed under it: it may or may not have been delivered; send it again with the same `Idempotency-Key`. Without a key, a delivered follow-up runs as a new `follow_up` process of the attempt (GET /api/processes?attemptId=…), after the run in progress if there is one: look there before sending it again. Any other 503 (Temporal known down) sent nothing.'],
  'GET /api/processes': ['listProcesses', 'List processes', 'Execution processes (agent runs, scripts), filtered by attempt or status.'],
  'GET /api/processes/{id}': ['getProcess', 'Get a process', 'One execution process with its status and exit code.'],
  'POST /api/processes/{id}/cancel': ['cancelProcess', 'Cancel a process', 'Stops a running execution process.'],
  'POST /api/execution-processes/{id}/stop': ['stopExecutionProcess', 'Stop a process (execution-processes path)', 'The same stop as POST /api/processes/{id}/cancel under the execution-processes path.'],
  'GET /api/processes/{id}/logs': ['getProcessLogs', 'Get process logs', 'The stdout and stderr of an execution process, one JSON object per line. `after` resumes after that seq; an `after` past the last stored line starts at that line and the response says so in the header `X-Log-Reset: <its seq>`. Range and conditional headers are ignored (always a 200 with every line asked for, `Accept-Ranges: none`).'],
  'GET /api/processes/{id}/metrics': ['getProcessMetrics', 'Get process metrics', 'The CPU and memory samples of an execution process and their averages.'],
  'GET /api/projects/{id}/branches': ['listProjectBranches', 'List project branches', 'The branches of the project repository; branches Armada manages for attempts are marked.'],
  'GET /api/containers/{id}': ['getContainer', 'Get an attempt container', 'The worktree an attempt runs in (its id is the attempt id).'],
  'GET /api/events/processes/{id}/logs': ['streamProcessLogs', 'Stream process logs', 'Server-sent events with the log lines of an execution process as they are written (`event: log`, `id: <seq>`); `Last-Event-ID` resumes after that seq (a plain decimal numeral up to 2147483647, as `after`; any other value is a 400). A Last-Event-ID past the last stored line starts at that line, announced first by `event: stream.ready` with `id: <its seq>` and data `{processId, seq, reset: true, requestedAfter}`. It ends with `event: end`, data `{processId, status}`: the final status, `deleted` when the process was deleted while followed. A stream has no byte ranges and no validators: `Range`, `If-Range` and the conditional headers are ignored (always a 200 from the start, `Accept-Ranges: none`); resume with `Last-Event-ID`.'],
  'GET /api/events/task-attempts/{id}/diff': ['streamAttemptDiff', 'Stream an attempt diff', 'Server-sent events with the diff of an attempt as it changes (`event: diff`, `id: <hash of the diff>`); `Last-Event-ID` with such an id sends nothing until the diff differs from it (any other value is a 400). It ends with `event: end`, data `{attemptId, status}`, once the attempt finished: its status then, `deleted` when it was deleted while followed. A stream has no byte ranges and no validators: `Range`, `If-Range` and the conditional headers are ignored (always a 200 from the start, `Accept-Ranges: none`); resume with `Last-Event-ID`.'],
};

const SCHEDULER: Catalogue = {
  'GET /api/v1/sources': ['listSources', 'List workflow sources', 'Every configured source of workflow definitions (e.g. a remote flow server).'],
  'POST /api/v1/sources': ['createSource', 'Add a workflow source', 'Registers a source of workflow definitions; answers 201 with it. Its `url` is stored in canonical form (lower-case scheme and host, punycode, no trailing dot on the host, no default port, percent-escapes in upper-case hex with unreserved characters decoded, no trailing slash); one another source has in any form is a 400.'],
  'GET /api/v1/sources/{id}': ['getSource', 'Get a workflow source', 'One workflow source by id.'],
  'PATCH /api/v1/sources/{id}': ['updateSource', 'Update a workflow source', 'Changes the given fields of a workflow source. A `url` is stored in canonical form (lower-case scheme and host, punycode, no trailing dot on the host, no default port, percent-escapes in upper-case hex with unreserved characters decoded, no trailing slash); one another source has in any form is a 400. A change of `url`, `source_type` or `api_key` is validated against the platform first (a 400 when that fails, nothing changed), and its flow list must have every flow the workflows on the source run: a 409 naming the workflows, tasks and flows it lacks, nothing changed, unless `force=true` is given (a planned migration: those runs fail until the flows exist there). Once it passes, a source its health check turned inactive is active again.'],
  'DELETE /api/v1/sources/{id}': ['deleteSource', 'Delete a workflow source', 'Removes a workflow source.'],
  'GET /api/v1/sources/{id}/flows': ['listSourceFlows', 'List the flows of a source', 'The runnable flows the remote source offers: id, name, endpoint_name, description, updated_at.'],
  'GET /api/v1/flows': ['listAllFlows', 'List the flows of every source', 'The runnable flows of every source in one list, each naming its source; a source that cannot answer is reported per source.'],
  'POST /api/v1/sources/{id}/health': ['checkSourceHealth', 'Check a source', 'Contacts the source now and reports whether it answers.'],
  'GET /api/v1/workflows': ['listWorkflows', 'List workflows', 'Every registered workflow with its schedule.'],
  'POST /api/v1/workflows': ['registerWorkflow', 'Register a workflow', 'Registers a workflow definition and its schedule. A name already taken is a 409: delete the workflow first to register it anew (its schedules are changed under /api/v1/workflows/{name}/schedules). So is a flow task whose source was moved to another platform (its url, source_type or api_key changed) while the workflow was being created: nothing is stored; send it again.'],
  'GET /api/v1/workflows/{name}': ['getWorkflow', 'Get a workflow', 'One workflow definition by name.'],
  'DELETE /api/v1/workflows/{name}': [
    'deleteWorkflow',
    'Delete a workflow',
    'Removes a workflow with its schedules and executions; its running executions are stopped (the answer waits up to 8 s for them), and a run still starting sends nothing.',
  ],
  'POST /api/v1/workflows/{name}/run': [
    'runWorkflow',
    'Run a workflow now',
    "Starts an execution of the workflow at once; answers 200 with the execution, which exists when the answer is made (a later deletion of the workflow removes it with the workflow's other executions). 404 when the workflow does not exist, also when it is deleted while the run is requested, up to the moment its run has started: no execution is left then, and the run sends and writes nothing (even when a workflow of the same name is created meanwhile). 503 when Temporal cannot be reached or does not answer the start within 10 s, unless the run has begun meanwhile: an execution answered 503 never runs.",
  ],
  'GET /api/v1/schedules': [
    'listSchedules',
    'List schedules',
    'Every schedule of every workflow (cron and one-time, each a Temporal Schedule) with its type, zone, input, status (active, paused, completed, expired) and next run.',
  ],
  'PATCH /api/v1/schedules/{workflow}': [
    'updateSchedule',
    'Update a workflow schedule',
    "Changes the workflow's default schedule (cron, timezone, jitter, input); a workflow without one gets it. A partial patch keeps the rest. A 409 while another change of it still waits for Temporal after 5 s: send it again.",
  ],
  'POST /api/v1/schedules/{workflow}/pause': ['pauseSchedule', 'Pause a workflow schedule', "Stops the runs of the workflow's default schedule until it is resumed."],
  'POST /api/v1/schedules/{workflow}/resume': ['resumeSchedule', 'Resume a workflow schedule', "Resumes the runs of the workflow's paused default schedule."],
  'GET /api/v1/workflows/{name}/schedules': ['listWorkflowSchedules', 'List the schedules of a workflow', 'Every schedule of one workflow, its default schedule first, completed one-time schedules included.'],
  'POST /api/v1/workflows/{name}/schedules': [
    'addWorkflowSchedule',
    'Add a schedule to a workflow',
    'Adds a cron schedule (`schedule`, `timezone`, `jitter`) or a one-time schedule (`at`: now, or a date-time with Z, an offset or a wall-clock time in `timezone`) with its own input; answers 201. Each schedule is its own Temporal Schedule.',
  ],
  'GET /api/v1/workflows/{name}/schedules/{id}': ['getWorkflowSchedule', 'Get a schedule', 'One schedule of a workflow with its status and next run.'],
  'PATCH /api/v1/workflows/{name}/schedules/{id}': [
    'updateWorkflowSchedule',
    'Update a schedule',
    'Changes one schedule: `schedule` and `jitter` (cron schedules), `at` (one-time schedules before they ran; 409 after), `timezone`, `input`.',
  ],
  'DELETE /api/v1/workflows/{name}/schedules/{id}': ['deleteWorkflowSchedule', 'Delete a schedule', 'Deletes one schedule of a workflow and its Temporal Schedule; its past executions stay. A 409 while another change of it still waits for Temporal after 5 s.'],
  'POST /api/v1/workflows/{name}/schedules/{id}/pause': ['pauseWorkflowSchedule', 'Pause a schedule', 'Stops the runs of one schedule until it is resumed; the others keep running.'],
  'POST /api/v1/workflows/{name}/schedules/{id}/resume': [
    'resumeWorkflowSchedule',
    'Resume a schedule',
    'Resumes the runs of one paused schedule. A one-time schedule whose time passed while it was paused is a 409 (Temporal dropped that time): move it first (PATCH `at`).',
  ],
  'GET /api/v1/executions': ['listExecutions', 'List executions', 'Workflow executions, newest first, filtered by workflow or status.'],
  'GET /api/v1/executions/{id}': ['getExecution', 'Get an execution', 'One workflow execution with its status and result.'],
  'GET /api/v1/executions/{id}/logs': ['getExecutionLogs', 'Get execution logs', 'The log lines of a workflow execution.'],
  'POST /api/v1/executions/{id}/stop': [
    'stopExecution',
    'Stop an execution',
    'Cancels a running workflow execution: its running task stops within about a second, and the answer waits up to 8 s for `stopped`. 503 when Temporal cannot be reached or does not answer within 10 s (the stop may still take effect: send it again).',
  ],
  'POST /api/v1/executions/{id}/retry': [
    'retryExecution',
    'Re-run an execution',
    'Starts a new execution of the same workflow (its current tasks) with the same input, linked to the original by `retryOf`; answers 201 at once with the new execution, which exists when the answer is made. 409 while the original is still running; 404 when the original is gone, also when its workflow is deleted while the retry is requested, up to the moment the new run has started: no execution is left then, and the run sends and writes nothing. 503 when Temporal cannot be reached or does not answer the start within 10 s, unless the run has begun meanwhile: an execution answered 503 never runs.',
  ],
};

const AGENTS: Catalogue = {
  'GET /api/v1/agents': ['listAgents', 'List agents', 'Every agent of the multi-agent service with its role and state.'],
  'GET /api/v1/agents/{name}/status': ['getAgentStatus', 'Get agent status', 'The state of one agent (idle, working, failed) and its current task.'],
  'POST /api/v1/agents/{name}/restart': ['restartAgent', 'Restart an agent', 'Restarts one agent.'],
  'POST /api/v1/tasks': ['submitAgentTask', 'Submit a task to the agents', 'Submits a task that the agents plan and carry out together; answers with the task.'],
  'GET /api/v1/tasks': ['listAgentTasks', 'List agent tasks', 'Tasks submitted to the multi-agent service, newest first.'],
  'GET /api/v1/tasks/{taskId}': ['getAgentTask', 'Get an agent task', 'One multi-agent task with its status and result.'],
  'POST /api/v1/memory': ['storeMemory', 'Store a memory', 'Stores a piece of shared agent memory.'],
  'GET /api/v1/memory/search': ['searchMemory', 'Search memory', 'Full-text search over the shared agent memory, with a relevance from 0 to 1.'],
  'GET /api/v1/memory/stats': ['getMemoryStats', 'Get memory statistics', 'How many memories are stored, by agent, and the storage they use.'],
};

const TRACES: Catalogue = {
  'POST /api/v1/traces': ['recordTrace', 'Record a message trace', 'Records one message exchange (request, response, timing) for later analysis.'],
  'GET /api/v1/traces': ['listTraces', 'List message traces', 'Recorded message traces, newest first, filtered by status or time.'],
  'POST /api/v1/traces/{id}/status': ['recordTraceStatus', 'Record a status receipt', 'Applies a status receipt (e.g. delivered, read) to a recorded message trace and returns the trace.'],
  'GET /api/v1/traces/analytics': ['getTraceAnalytics', 'Get trace analytics', 'Counts and latency figures over the recorded traces.'],
  'GET /api/v1/traces/{id}': ['getTrace', 'Get a message trace', 'One recorded message trace.'],
};

const CATALOGUES: Record<ServiceKind, Catalogue> = { task: TASK, scheduler: SCHEDULER, agents: AGENTS, traces: TRACES };

/** The documentation of one operation, or undefined when the catalogue does not know it. */
export function operationDoc(service: ServiceKind, method: string, openapiPath: string): OperationDoc | undefined {
  const entry = CATALOGUES[service][`${method.toUpperCase()} ${openapiPath}`];
  return entry ? { operationId: entry[0], summary: entry[1], description: entry[2] } : undefined;
}
