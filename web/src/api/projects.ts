/** Project queries and mutations, and the filesystem browser used to pick a local repository. */
import { useQuery } from '@tanstack/react-query';
import { api, apiPage } from './client';
import { queryKeys } from './queryKeys';
import type { ProjectDetail, ProjectListItem } from './types';

export async function fetchProjects(signal?: AbortSignal): Promise<ProjectListItem[]> {
  const first = await apiPage<ProjectListItem>('/projects', { query: { limit: 100, page: 1 }, signal });
  const rest = await Promise.all(
    Array.from({ length: Math.max(0, first.pagination.pages - 1) }, (_, i) => apiPage<ProjectListItem>('/projects', { query: { limit: 100, page: i + 2 }, signal })),
  );
  return [first, ...rest].flatMap((p) => p.data);
}

/**
 * Projects have no events of their own (only their tasks do: docs/ui.md, Known limits), so nothing tells a screen
 * that one was created, edited or deleted elsewhere, or while the connection was out: the project queries are read
 * again when the tab is shown again and when the browser is back online, however fresh they are. (The board's other
 * queries do neither: the streams keep them.)
 */
const readAgainOnReturn = { refetchOnWindowFocus: 'always', refetchOnReconnect: 'always' } as const;

export function useProjects() {
  return useQuery({ queryKey: queryKeys.projects(), queryFn: ({ signal }) => fetchProjects(signal), meta: { inlineError: true }, ...readAgainOnReturn });
}

/** One project; `inlineError`: its screen shows a failure itself (the board's "Project not found"), no toast. */
export function useProject(id: string, opts: { inlineError?: boolean } = {}) {
  return useQuery({
    queryKey: queryKeys.project(id),
    queryFn: ({ signal }) => api<ProjectDetail>(`/projects/${encodeURIComponent(id)}`, { signal }),
    meta: opts.inlineError ? { inlineError: true } : undefined,
    ...readAgainOnReturn,
  });
}

export interface CreateProjectFields {
  name: string;
  description?: string;
  repository: { url: string; branch?: string };
  defaultLLM?: string;
  setup_script?: string;
  dev_script?: string;
}

export interface EditProjectFields {
  name?: string;
  description?: string;
  defaultLLM?: string | null;
  setup_script?: string;
  dev_script?: string;
}

export const createProject = (fields: CreateProjectFields) => api<ProjectDetail>('/projects', { method: 'POST', body: fields });
export const editProject = (id: string, fields: EditProjectFields) => api<ProjectDetail>(`/projects/${encodeURIComponent(id)}`, { method: 'PATCH', body: fields });
export const deleteProject = (id: string) => api(`/projects/${encodeURIComponent(id)}`, { method: 'DELETE' });

export interface DirectoryEntry {
  name: string;
  path: string;
  type: 'file' | 'directory' | 'fifo' | 'socket' | 'block_device' | 'character_device';
  isGitRepo: boolean;
  hidden: boolean;
}

export interface DirectoryListing {
  path: string;
  entries: DirectoryEntry[];
  truncated: boolean;
}

export interface GitRepo {
  path: string;
  name: string;
  branch: string;
  isSubmodule: boolean;
}

/** Where browsing can start: the allowed roots that exist (GET /api/filesystem/roots). */
export const listFilesystemRoots = (signal?: AbortSignal) => api<{ roots: string[] }>('/filesystem/roots', { signal });
export const listDirectory = (path: string, signal?: AbortSignal) => api<DirectoryListing>('/filesystem/list', { query: { path }, signal });
export const findGitRepos = (path: string, signal?: AbortSignal) => api<{ repositories: GitRepo[]; truncated: boolean }>('/filesystem/git-repos', { query: { path, maxDepth: 3 }, signal });
/** The current branch of the repository at `path` (git-repos at depth 0: the path itself); null when it is no repository, or detached. */
export async function currentBranchOf(path: string, signal?: AbortSignal): Promise<string | null> {
  const found = await api<{ repositories: GitRepo[] }>('/filesystem/git-repos', { query: { path, maxDepth: 0, includeSubmodules: true }, signal });
  const branch = found.repositories[0]?.branch;
  return branch && !branch.startsWith('(detached') ? branch : null;
}
