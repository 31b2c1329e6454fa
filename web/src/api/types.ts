/** Shapes of the task service's responses the board reads (api/task/*Schemas.ts; docs/task-service.md). */
export type TaskStatus = 'pending' | 'in_progress' | 'review' | 'completed' | 'failed' | 'cancelled';
export type TaskPriority = 'low' | 'medium' | 'high' | 'critical';

export const TASK_STATUSES: TaskStatus[] = ['pending', 'in_progress', 'review', 'completed', 'failed', 'cancelled'];
export const TASK_PRIORITIES: TaskPriority[] = ['low', 'medium', 'high', 'critical'];

export interface Task {
  id: string;
  projectId: string;
  title: string;
  description: string;
  status: TaskStatus;
  priority: TaskPriority;
  labels: string[];
  assignee: string | null;
  createdBy: string;
  createdAt: string;
  updatedAt: string;
  completedAt: string | null;
  metadata: Record<string, unknown>;
}

export interface AttemptSummary {
  id: string;
  number: number;
  llm: string;
  status: string;
  branch: string | null;
  startedAt: string | null;
  completedAt: string | null;
  duration: number | null;
  cost: number;
  filesChanged: number;
  linesAdded: number;
  linesRemoved: number;
}

export interface TaskDetail extends Task {
  attempts: AttemptSummary[];
  stats: { totalAttempts: number; successfulAttempts: number; failedAttempts: number; totalCost: number; totalDuration: number };
}

export interface ProjectListItem {
  id: string;
  name: string;
  description: string;
  git_repo_path: string;
  setup_script: string;
  dev_script: string;
  repository: { url: string; branch: string };
  defaultLLM: string | null;
  createdAt: string;
  updatedAt: string;
}

export interface ProjectDetail extends Omit<ProjectListItem, 'repository'> {
  repository: { url: string; branch: string; lastSync: string | null; status: string; error?: string };
  config: { worktrees: { enabled: boolean; basePath: string }; llms: Record<string, { model: string }> };
  stats: { tasks: number; completedTasks: number; inProgressTasks: number; failedTasks: number; activeAttempts: number; totalCost: number };
}
