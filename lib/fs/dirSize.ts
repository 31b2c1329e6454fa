import fs from 'node:fs';
import path from 'node:path';

/**
 * Bytes in the regular files under dir (symlinks not followed), 0 when it cannot be read. Stops after
 * `budget.files` entries, so a huge tree cannot hold the caller for long.
 */
export function dirSize(dir: string, budget = { files: 200_000 }): number {
  let total = 0;
  let entries: fs.Dirent[];
  try {
    entries = fs.readdirSync(dir, { withFileTypes: true });
  } catch {
    return 0;
  }
  for (const e of entries) {
    if (budget.files-- <= 0) break;
    const p = path.join(dir, e.name);
    if (e.isDirectory()) total += dirSize(p, budget);
    else if (e.isFile()) {
      try {
        total += fs.statSync(p).size;
      } catch {
        /* gone meanwhile */
      }
    }
  }
  return total;
}
