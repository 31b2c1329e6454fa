/**
 * Every screen's address. Screens other than Projects and Board load on first visit (their own chunk), so the first
 * page stays small. The task service answers index.html for these paths (api/task/webAssets.ts, WEB_ROUTES): a new
 * top-level path must be added there too.
 */
import { Navigate, type RouteObject } from 'react-router';
import { Layout } from './components';
import { BoardPage } from './pages/BoardPage';
import { NotFoundPage } from './pages/NotFoundPage';
import { ProjectsPage } from './pages/ProjectsPage';
import { ScreenError } from './pages/ScreenError';

export const routes: RouteObject[] = [
  {
    path: '/',
    Component: Layout,
    children: [
      {
        // a screen that fails (its lazy code not fetched, or an exception) is said in its place, under the navigation
        ErrorBoundary: ScreenError,
        children: [
          { index: true, element: <Navigate to="/projects" replace /> },
          { path: 'projects', Component: ProjectsPage },
          { path: 'projects/:id', Component: BoardPage },
          { path: 'tasks/:id', lazy: async () => ({ Component: (await import('./pages/TaskPage')).TaskPage }) },
          { path: 'approvals', lazy: async () => ({ Component: (await import('./pages/ApprovalsPage')).ApprovalsPage }) },
          { path: 'scheduler', lazy: async () => ({ Component: (await import('./pages/SchedulerPage')).SchedulerPage }) },
          { path: 'agents', lazy: async () => ({ Component: (await import('./pages/AgentsPage')).AgentsPage }) },
          { path: 'traces', lazy: async () => ({ Component: (await import('./pages/TracesPage')).TracesPage }) },
          { path: 'settings', lazy: async () => ({ Component: (await import('./pages/SettingsPage')).SettingsPage }) },
          { path: '*', Component: NotFoundPage },
        ],
      },
    ],
  },
];
