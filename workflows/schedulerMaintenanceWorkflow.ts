/** The scheduler's periodic chores, started by the `scheduler-maintenance:<queue>` schedule: source health, retention. */
import { proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../activities';

const { checkSourcesHealth, pruneExecutions } = proxyActivities<Activities>({
  startToCloseTimeout: '2 minutes',
  retry: { initialInterval: '2s', maximumAttempts: 3 },
});

export async function schedulerMaintenanceWorkflow(): Promise<{ checked: number; healthy: number; pruned: number }> {
  const health = await checkSourcesHealth();
  const { deleted } = await pruneExecutions();
  return { ...health, pruned: deleted };
}
