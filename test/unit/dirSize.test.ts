import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { dirSize } from '../../lib/fs/dirSize';

test('dirSize adds the files of a tree, stops at its entry budget, and is 0 for a missing directory', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-dirsize-'));
  fs.mkdirSync(path.join(dir, 'a', 'b'), { recursive: true });
  fs.writeFileSync(path.join(dir, 'x'), 'x'.repeat(100));
  fs.writeFileSync(path.join(dir, 'a', 'b', 'y'), 'y'.repeat(50));
  expect(dirSize(dir)).toBe(150);
  expect(dirSize(dir, { files: 1 })).toBeLessThan(150);
  expect(dirSize(path.join(dir, 'missing'))).toBe(0);
  fs.rmSync(dir, { recursive: true, force: true });
});
