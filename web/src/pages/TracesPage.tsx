import { Placeholder } from '../components';

export function TracesPage() {
  return <Placeholder title="Traces" text="Message traces with filters and analytics." />;
}
