/**
 * Saves the screen a browser test reached as <name>.png: into test-results/ui/screens/ on every run (look at them
 * after a run), and into docs/ui/ as well when ARMADA_UPDATE_DOCS_SCREENSHOTS=1, so a test run leaves the tracked
 * files as they were (docs/ui.md, "Screenshots").
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Page } from '@playwright/test';

const ROOT = path.join(__dirname, '..', '..');

/** The files a screenshot named `name` is written to. */
export function screenshotFiles(name: string, env: NodeJS.ProcessEnv = process.env): string[] {
  const files = [path.join(ROOT, 'test-results', 'ui', 'screens', `${name}.png`)];
  if (env.ARMADA_UPDATE_DOCS_SCREENSHOTS === '1') files.push(path.join(ROOT, 'docs', 'ui', `${name}.png`));
  return files;
}

export async function screenshot(page: Page, name: string, opts: { fullPage?: boolean } = {}): Promise<void> {
  const png = await page.screenshot({ fullPage: opts.fullPage ?? true });
  for (const file of screenshotFiles(name)) {
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, png);
  }
}
