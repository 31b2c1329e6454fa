import { Placeholder } from '../components';

export function AgentsPage() {
  return <Placeholder title="Agents" text="Agents with their status and queue." />;
}
