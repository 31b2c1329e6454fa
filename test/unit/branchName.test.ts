/**
 * BRANCH_NAME_PATTERN (lib/git.ts) is git's own rule for a branch name: it accepts exactly what
 * `git check-ref-format --branch` accepts, checked here against git itself on hand-picked names and on random ones
 * built from the characters the rules are about. The pattern is compiled as ajv compiles a schema's `pattern`.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { BRANCH_NAME_PATTERN } from '../../lib/git';

const pattern = new RegExp(BRANCH_NAME_PATTERN, 'u');
// outside any repository, so git reads no `@{-1}` history
const cwd = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-refname-'));
afterAll(() => fs.rmSync(cwd, { recursive: true, force: true }));

function gitAccepts(name: string): boolean {
  try {
    execFileSync('git', ['check-ref-format', '--branch', name], { cwd, stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

const HAND_PICKED = [
  'main', 'feature/x', 'a/b/c', 'x.lock.y', 'lock', 'a./b', 'a/-b', 'a/HEAD', 'HEAD/a', 'HEADS', 'é/ü', '@', '@@', 'a@b', '{', 'a{', '@}', 'v1.2.3', 'a_b-c',
  'HEAD', '-x', '-', '--orphan=x', '--output=/tmp/x', '../../x', 'a..b', 'a..', '@{x', 'a@{-1}', '@{-1}', 'a/.b', '.a', '.', '..', 'a.lock', 'a.lock/b', 'b/a.lock',
  '.lock', 'a/b.', 'a.', '/a', 'a/', 'a//b', '//', 'a b', 'a\tb', 'a\nb', 'a~b', 'a^b', 'a:b', 'a?b', 'a*b', 'a[b', 'a\\b', 'a\u007fb', 'a\u0001', 'trailing\n',
  'a\u2028..b', 'a\u2028/.b', '',
];

test('hand-picked names: the pattern accepts what git accepts, and nothing else', () => {
  const disagree = HAND_PICKED.filter((n) => pattern.test(n) !== gitAccepts(n));
  expect(disagree).toEqual([]);
  // the names an outside tester sent (201 before, then an attempt forked from the current branch)
  for (const n of ['../../x', '--orphan=x', '--output=/tmp/owned']) expect(pattern.test(n)).toBe(false);
});

test('random names over the characters the rules are about agree with git', () => {
  const alphabet = ['a', 'b', '.', '/', '@', '{', '-', 'H', 'E', 'A', 'D', 'l', 'o', 'c', 'k', ' ', '~', '*', 'é', '\u2028'];
  let seed = 12345;
  const next = () => {
    seed = (seed * 16807) % 2147483647; // Park–Miller: exact in doubles, the same names every run
    return seed / 2147483647;
  };
  const names = new Set<string>();
  while (names.size < 300) {
    const len = 1 + Math.floor(next() * 8);
    names.add(Array.from({ length: len }, () => alphabet[Math.floor(next() * alphabet.length)]).join(''));
  }
  const disagree = [...names].filter((n) => pattern.test(n) !== gitAccepts(n));
  expect(disagree).toEqual([]);
});
