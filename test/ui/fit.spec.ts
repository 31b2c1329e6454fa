/**
 * Projects' task stats and the traces' chart fit their window at 1,280 and 390 px, and again after the window is
 * resized between the two (no reload): the page does not scroll sideways, every stat is whole, on one line and clear
 * of the row's buttons, and the chart fills its card without running out of it (its status bar 18 px high).
 */
import type { Locator, Page } from '@playwright/test';
import { api, createProject, expect, svcApi, test } from './fixtures';
import { screenshot } from './screenshot';

/** Wide, phone, and wide again: the last two are resizes of the open screen. */
const WIDTHS = [1280, 390, 1280, 390];

/** How far the page reaches past the window's right edge (0 or less: it does not scroll sideways). */
const sideways = (page: Page) => page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);

/** The element's box and how many lines its text takes. */
const boxAndLines = (l: Locator) =>
  l.evaluate((el) => {
    const r = el.getBoundingClientRect();
    const range = document.createRange();
    range.selectNodeContents(el);
    const lines = new Set([...range.getClientRects()].filter((c) => c.width > 0).map((c) => Math.round(c.top))).size;
    return { left: r.left, right: r.right, lines };
  });

test("Projects: a project's five stats are whole, each on one line, in the window and clear of its buttons, at 1,280 and 390 px and after resizes", async ({ page }) => {
  const project = await createProject(`Stats that fit ${Date.now()}`);
  for (const title of ['one', 'two', 'three']) await api('POST', '/tasks', { projectId: project.id, title });
  const running = await api<{ id: string }>('POST', '/tasks', { projectId: project.id, title: 'four' });
  await api('PATCH', `/tasks/${running.id}`, { status: 'in_progress' });

  await page.setViewportSize({ width: WIDTHS[0] as number, height: 800 });
  await page.goto('/projects');
  const row = page.getByRole('row').filter({ has: page.getByRole('link', { name: project.name }) });
  await expect(row).toBeVisible();
  for (const width of WIDTHS) {
    await page.setViewportSize({ width, height: 800 });
    await expect.poll(() => sideways(page), { message: `sideways overflow at ${width} px` }).toBeLessThanOrEqual(0);
    const wide = width > 720;
    // a wide window: one column each; a narrow one: a list under the project's name (the columns ran under the buttons)
    const stats = wide
      ? row.locator('td.num')
      : row.getByRole('list', { name: `Task stats of ${project.name}` }).getByRole('listitem');
    await expect(stats).toHaveText(wide ? ['4', '1', '0', '0', '$0.00'] : ['Tasks 4', 'In progress 1', 'Done 0', 'Failed 0', 'Cost $0.00']);
    const buttons = await row.getByRole('button', { name: `Edit ${project.name}` }).boundingBox();
    if (!buttons) throw new Error('no Edit button');
    for (const stat of await stats.all()) {
      const seen = await boxAndLines(stat);
      const what = `${await stat.textContent()} at ${width} px`;
      expect(seen.lines, `${what}: lines`).toBe(1);
      expect(seen.left, `${what}: left edge`).toBeGreaterThanOrEqual(0);
      expect(seen.right, `${what}: right edge`).toBeLessThanOrEqual(width);
      // not scrolled under the row's buttons, which stay at the table's right edge
      expect(seen.right, `${what}: clear of Edit`).toBeLessThanOrEqual(buttons.x);
    }
    // the headers of the stats' columns are on one line too ("In progress" broke in two)
    if (wide) {
      for (const name of ['Tasks', 'In progress', 'Done', 'Failed', 'Cost']) {
        expect((await boxAndLines(page.getByRole('table', { name: 'Projects' }).getByRole('columnheader', { name, exact: true }))).lines, `${name} header at ${width} px`).toBe(1);
      }
    }
  }
  await screenshot(page, 'narrow-projects-stats', { fullPage: false });
});

test("Traces: the chart fills its card and stays inside it at 1,280 and 390 px and after resizes; the page does not scroll sideways", async ({ page }) => {
  await svcApi('traces', 'POST', '/traces', { messageId: `ui-fit-${Date.now()}`, instance: 'ui-fit', to: '+15550102002', message: 'fits', status: 'delivered', sentAt: new Date().toISOString() });
  await page.setViewportSize({ width: WIDTHS[0] as number, height: 800 });
  await page.goto('/traces');
  const card = page.getByRole('region', { name: 'Analytics' });
  const chart = page.getByTestId('trace-chart');
  await expect(chart.locator('g[data-day]')).toHaveCount(7);
  const boxes = () =>
    card.evaluate((section) => {
      const c = section.getBoundingClientRect();
      const svg = section.querySelector('[data-testid="trace-chart"]') as SVGSVGElement;
      const s = svg.getBoundingClientRect();
      const bar = section.querySelector('svg[aria-label^="By status"]')?.getBoundingClientRect();
      const label = svg.querySelector('text[data-label]')?.getBoundingClientRect();
      return {
        card: { left: c.left, right: c.right },
        chart: { left: s.left, right: s.right },
        bar: bar ? { left: bar.left, right: bar.right } : null,
        // stretched, not scaled: 18 px high at any width (7 px on a phone, scaled)
        barHeight: bar ? Math.round(bar.height) : 0,
        // drawn at the width it is shown at: its 11 px text is 11 px
        labelHeight: label?.height ?? 0,
      };
    });
  for (const width of WIDTHS) {
    await page.setViewportSize({ width, height: 800 });
    await expect.poll(() => sideways(page), { message: `sideways overflow at ${width} px` }).toBeLessThanOrEqual(0);
    // polled: the chart is drawn again at its new width once its figure's resize is seen
    await expect
      .poll(async () => {
        const f = await boxes();
        const inside = (b: { left: number; right: number } | null) => !!b && b.left >= f.card.left - 0.5 && b.right <= f.card.right + 0.5;
        const fills = (b: { left: number; right: number } | null) => !!b && b.right - b.left >= f.card.right - f.card.left - 1;
        return { chartInside: inside(f.chart), chartFills: fills(f.chart), barInside: inside(f.bar), barFills: fills(f.bar), barHeight: f.barHeight, labelAt11px: f.labelHeight >= 10 && f.labelHeight <= 16 };
      }, { message: `the chart in its card at ${width} px` })
      .toEqual({ chartInside: true, chartFills: true, barInside: true, barFills: true, barHeight: 18, labelAt11px: true });
    const { card: c, chart: s } = await boxes();
    expect(s.right, `the chart's right edge at ${width} px`).toBeLessThanOrEqual(width);
    expect(c.right, `the card's right edge at ${width} px`).toBeLessThanOrEqual(width);
  }
  await screenshot(page, 'narrow-traces-chart', { fullPage: false });
});
