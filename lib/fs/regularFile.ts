/**
 * Reading a path that should name a regular file (an editor's config file), whatever it names instead: a FIFO blocks
 * an open until a writer comes, a device such as a zero device never ends, a socket cannot be opened at all. The type
 * is checked before opening (after following links), the open never blocks, the type is checked again on what was
 * opened, and at most a given number of bytes is read.
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

/** The file holds more than the caller reads. */
export class FileTooLargeError extends Error {
  readonly code = 'ETOOLARGE';
  constructor(
    readonly file: string,
    readonly maxBytes: number,
  ) {
    super(`${file} is larger than ${maxBytes} bytes`);
    this.name = 'FileTooLargeError';
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

const CHUNK = 64 * 1024;

/**
 * The text of a regular file of at most `maxBytes` (UTF-8). Throws NotAFileError for anything else (without opening a
 * device, a FIFO or a socket), FileTooLargeError past `maxBytes`, and the file system's own errors (ENOENT, EACCES…).
 */
export function readRegularFile(file: string, maxBytes: number): string {
  const before = fs.statSync(file);
  const kind = notAFile(before);
  if (kind) throw new NotAFileError(file, kind);
  if (before.size > maxBytes) throw new FileTooLargeError(file, maxBytes);
  // O_NONBLOCK: had the path become a FIFO since the stat, the open would wait for a writer forever
  const fd = fs.openSync(file, fs.constants.O_RDONLY | (fs.constants.O_NONBLOCK ?? 0));
  try {
    const opened = notAFile(fs.fstatSync(fd));
    if (opened) throw new NotAFileError(file, opened);
    const chunks: Buffer[] = [];
    let total = 0;
    for (;;) {
      const chunk = Buffer.allocUnsafe(Math.min(CHUNK, maxBytes + 1 - total));
      const n = fs.readSync(fd, chunk, 0, chunk.length, null);
      if (n === 0) break;
      chunks.push(chunk.subarray(0, n));
      total += n;
      // a file that grew since the stat (or one whose size the stat does not tell) is read no further than this
      if (total > maxBytes) throw new FileTooLargeError(file, maxBytes);
    }
    return Buffer.concat(chunks, total).toString('utf8');
  } finally {
    fs.closeSync(fd);
  }
}
