/** Saves the screen a browser test reached into docs/ui/<name>.png, on every run like test/ui/screenshots.spec.ts (docs/ui.md). */
import path from 'node:path';
import type { Page } from '@playwright/test';

export async function screenshot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: path.join(__dirname, '..', '..', 'docs', 'ui', `${name}.png`), fullPage: true });
}
