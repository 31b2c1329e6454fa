/**
 * The end of a multi-agent test file: the process groups its scripted agents left are killed, the actors of its
 * agents (`agent:<name>`, global to the Temporal namespace) are terminated, the stack is closed and the pid directory
 * the agents wrote to is removed.
 */
import fs from 'node:fs';
import type { TestStack } from './harness';

export async function closeAgentsStack(stack: TestStack, opts: { agents: string[]; groups: number[]; pidDir: string; beforeClose?: () => Promise<unknown> }): Promise<void> {
  for (const pgid of opts.groups) {
    try {
      process.kill(-pgid, 'SIGKILL');
    } catch {
      /* gone */
    }
  }
  const client = await stack.temporal.client();
  await Promise.allSettled(opts.agents.map((name) => client.workflow.getHandle(`agent:${name}`).terminate('test over')));
  await opts.beforeClose?.();
  await stack.close();
  fs.rmSync(opts.pidDir, { recursive: true, force: true });
}
