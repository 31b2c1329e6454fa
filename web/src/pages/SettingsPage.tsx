import { Placeholder } from '../components';

export function SettingsPage() {
  return <Placeholder title="Settings" text="Agent profiles, webhooks and the API key." />;
}
