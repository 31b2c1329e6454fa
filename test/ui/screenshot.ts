/** `ARMADA_UI_SCREENSHOTS=1` makes the browser tests save the screens they reach into docs/ui/<name>.png (docs/ui.md). */
import path from 'node:path';
import type { Page } from '@playwright/test';

export async function screenshot(page: Page, name: string): Promise<void> {
  if (process.env.ARMADA_UI_SCREENSHOTS !== '1') return;
  await page.screenshot({ path: path.join(__dirname, '..', '..', 'docs', 'ui', `${name}.png`), fullPage: true });
}
