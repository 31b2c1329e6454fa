import { Placeholder } from '../components';

export function ApprovalsPage() {
  return <Placeholder title="Approvals" text="Pending approvals for you, with expiry, and their history." />;
}
