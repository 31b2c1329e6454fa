/** The entry names of a directory; none when the directory does not exist (other errors are thrown). */
import fs from 'node:fs';

export function namesIn(dir: string): string[] {
  try {
    return fs.readdirSync(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
}
