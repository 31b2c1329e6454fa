import { Placeholder } from '../components';

export function TaskPage() {
  return <Placeholder title="Task" text="Description, attempts, live log, diff and merge of one task." />;
}
