/** Every TanStack Query key of the board, in one place so live updates patch the same caches the screens read. */
export const queryKeys = {
  projects: () => ['projects'] as const,
  project: (id: string) => ['projects', id] as const,
  projectTasks: (projectId: string) => ['projects', projectId, 'tasks'] as const,
  task: (id: string) => ['tasks', id] as const,
  attempt: (id: string) => ['attempts', id] as const,
  attemptProcesses: (id: string) => ['attempts', id, 'processes'] as const,
  attemptDiff: (id: string) => ['attempts', id, 'diff'] as const,
  taskTemplates: () => ['task-templates'] as const,
  approvals: (scope: string) => ['approvals', scope] as const,
  scheduler: (what: string) => ['scheduler', what] as const,
  agents: () => ['agents'] as const,
  traces: (filters: string) => ['traces', filters] as const,
  webhooks: () => ['webhooks'] as const,
};
