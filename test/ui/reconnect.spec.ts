/**
 * A lost stream: the board shows "Connection lost — reconnecting…", reconnects by itself and resumes after the last
 * event it saw (/ws/events?after=<seq>), so a task created while it was away still appears, once.
 */
import type { WebSocketRoute } from '@playwright/test';
import { api, createProject, expect, test } from './fixtures';

test('the board reconnects after a dropped stream and catches up on what it missed', async ({ page }) => {
  const project = await createProject('Reconnect Board');
  const sockets: WebSocketRoute[] = [];
  const urls: string[] = [];
  let refuse = false;
  await page.routeWebSocket(/\/ws\/events/, (ws) => {
    urls.push(ws.url());
    if (refuse) {
      ws.close({ code: 4000, reason: 'test: network down' });
      return;
    }
    ws.connectToServer();
    sockets.push(ws);
  });
  await page.goto(`/projects/${project.id}`);
  await api('POST', '/tasks', { projectId: project.id, title: 'Before the drop' });
  await expect(page.getByRole('article', { name: 'Before the drop' })).toBeVisible();

  // the network goes away: the open socket closes and new ones are refused for a while
  refuse = true;
  await sockets[0]?.close({ code: 4000, reason: 'test: dropped' });
  await expect(page.getByText('Connection lost — reconnecting…')).toBeVisible();
  await api('POST', '/tasks', { projectId: project.id, title: 'Created while away' });
  await page.waitForTimeout(600); // a refused retry or two
  refuse = false;

  await expect(page.getByRole('article', { name: 'Created while away' })).toBeVisible({ timeout: 15_000 });
  await expect(page.getByText('Connection lost — reconnecting…')).toBeHidden();
  await expect(page.getByRole('article', { name: 'Created while away' })).toHaveCount(1);
  await expect(page.locator('[data-column="todo"] .count')).toHaveText('2');
  // the reconnect asked for the events after the last one seen
  expect(urls[0]).not.toContain('after=');
  expect(urls.at(-1)).toMatch(/[?&]after=\d+/);
});
