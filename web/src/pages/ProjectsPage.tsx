import { useQuery } from '@tanstack/react-query';
import { Link } from 'react-router';
import { apiPage, type ProjectListItem, queryKeys } from '../api';
import { ErrorMessage } from '../components';

export function ProjectsPage() {
  const projects = useQuery({ queryKey: queryKeys.projects(), queryFn: ({ signal }) => apiPage<ProjectListItem>('/projects', { query: { limit: 100 }, signal }), meta: { inlineError: true } });
  return (
    <section>
      <h1>Projects</h1>
      {projects.error ? <ErrorMessage error={projects.error} onRetry={() => void projects.refetch()} /> : null}
      {projects.data ? (
        <ul className="project-list">
          {projects.data.data.map((p) => (
            <li key={p.id}>
              <Link to={`/projects/${p.id}`}>{p.name}</Link> <span className="muted">{p.git_repo_path || p.repository.url}</span>
            </li>
          ))}
        </ul>
      ) : null}
    </section>
  );
}
