import os from 'node:os';
import path from 'node:path';
import { diskFullCause } from '../../lib/fs/diskFull';

// the temp dir's disk has room (a test machine with less than 1 MiB free there fails long before this file)
const roomy = path.join(os.tmpdir(), 'no-such-dir', 'below');

test('an error that says ENOSPC on a disk with room now: named with the free space now', () => {
  const err = Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
  expect(diskFullCause(err, [roomy])).toMatch(new RegExp(`^no space was left on the disk holding ${roomy} \\(\\d+ (MiB|KiB) free now\\)$`));
  expect(diskFullCause(new Error('fatal: unable to write loose object file: No space left on device'), [roomy])).toMatch(/^no space was left on the disk holding /);
  expect(diskFullCause(new Error("fatal: sha1 file '…/index.lock' write error. Out of diskspace"), [])).toBe('no space was left on the disk');
});

test('any other error on a disk with room: not the disk', () => {
  expect(diskFullCause(new Error("fatal: cannot update ref 'refs/heads/x': couldn't write 'x.lock'"), [roomy])).toBeUndefined();
  expect(diskFullCause('not an error', [roomy])).toBeUndefined();
});
