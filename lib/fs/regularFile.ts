/**
 * Paths that should name a regular file (an editor's config file) but may name anything: a directory, a device, a
 * FIFO, a socket. Said in words, so that a refusal can say what is there.
 */
import fs from 'node:fs';

/** What a stat result is when it is not a regular file, in words (`a FIFO (named pipe)`); undefined for a file. */
export function notAFile(st: fs.Stats): string | undefined {
  if (st.isFile()) return undefined;
  if (st.isDirectory()) return 'a directory';
  if (st.isFIFO()) return 'a FIFO (named pipe)';
  if (st.isSocket()) return 'a socket';
  if (st.isCharacterDevice()) return 'a character device';
  if (st.isBlockDevice()) return 'a block device';
  return 'something other than a file';
}

/** The path names something that is not a regular file (`kind` says what, as notAFile does). */
export class NotAFileError extends Error {
  readonly code = 'ENOTAFILE';
  constructor(
    readonly file: string,
    readonly kind: string,
  ) {
    super(`${file} is ${kind}, not a file`);
    this.name = 'NotAFileError';
  }
}

/** What `file` names once its links are followed; undefined when nothing is there (or a part of its path is a file). */
export function statIfExists(file: string): fs.Stats | undefined {
  try {
    return fs.statSync(file);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return undefined;
    throw err;
  }
}
