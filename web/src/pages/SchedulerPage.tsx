import { Placeholder } from '../components';

export function SchedulerPage() {
  return <Placeholder title="Scheduler" text="Sources, workflows, schedules and executions." />;
}
