/** Where the browser tests' screenshots go: test-results on every run, docs/ui only when asked (docs/ui.md). */
import path from 'node:path';
import { screenshotFiles } from './screenshot';

const ROOT = path.join(__dirname, '..', '..');

test('a test run writes screenshots under test-results only', () => {
  expect(screenshotFiles('board', {})).toEqual([path.join(ROOT, 'test-results', 'ui', 'screens', 'board.png')]);
});

test('ARMADA_UPDATE_DOCS_SCREENSHOTS=1 also rewrites docs/ui', () => {
  expect(screenshotFiles('board', { ARMADA_UPDATE_DOCS_SCREENSHOTS: '1' })).toEqual([
    path.join(ROOT, 'test-results', 'ui', 'screens', 'board.png'),
    path.join(ROOT, 'docs', 'ui', 'board.png'),
  ]);
});
