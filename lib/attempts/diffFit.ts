/**
 * A unified diff fitted into a byte budget, counted as the text travels in one Temporal payload (JSON), for a read on
 * another host (readWorktree.ts).
 * Files are never dropped: one that does not fit is listed the way lib/attempts/gitDiff.ts lists a file too large to
 * show, its header lines and an OMITTED_MARKER line with its counts instead of its lines. The smallest files are kept
 * whole first, so as many files as possible show whole. Pure, so it is tested on its own.
 */
import { OMITTED_MARKER } from './diffParse';

export interface FittedDiff {
  text: string;
  /** even the files as omitted blocks do not fit: `text` lists only those that did */
  truncated: boolean;
}

/** The diff cut into one block per file (each from its `diff --git` line), and what comes before the first. */
function fileBlocks(text: string): { head: string; blocks: string[] } {
  const starts: number[] = [];
  if (text.startsWith('diff --git ')) starts.push(0);
  for (let i = text.indexOf('\ndiff --git '); i !== -1; i = text.indexOf('\ndiff --git ', i + 1)) starts.push(i + 1);
  const head = text.slice(0, starts[0] ?? text.length);
  return { head, blocks: starts.map((s, k) => text.slice(s, starts[k + 1] ?? text.length)) };
}


/** A file's block as an omitted block: its header lines (names, modes, rename), its counts, and why. */
export function omitBlock(block: string, why: string): string {
  if (block.includes(`\n${OMITTED_MARKER}: `)) return block; // already one
  let header = '';
  let added = 0;
  let removed = 0;
  let inHunk = false;
  let at = 0;
  while (at < block.length) {
    const end = block.indexOf('\n', at);
    const line = block.slice(at, end === -1 ? block.length : end);
    at = end === -1 ? block.length : end + 1;
    if (!inHunk) {
      // the header but its `---`/`+++` lines, which would announce lines that do not follow
      if (line.startsWith('@@ ')) inHunk = true;
      else if (line && !line.startsWith('--- ') && !line.startsWith('+++ ')) header += `${line}\n`;
      continue;
    }
    if (line.startsWith('+')) added++;
    else if (line.startsWith('-')) removed++;
  }
  return `${header}${OMITTED_MARKER}: ${added} lines added, ${removed} removed (${why})\n`;
}

/** Bytes of a text as it travels in a payload: JSON-encoded (a tab or a quote takes two bytes, a control byte six). */
const sizeOf = (s: string): number => Buffer.byteLength(JSON.stringify(s)) - 2;

export function fitDiff(text: string, maxBytes: number, why: string): FittedDiff {
  if (sizeOf(text) <= maxBytes) return { text, truncated: false };
  const { head, blocks } = fileBlocks(text);
  const whole = blocks.map(sizeOf);
  const omitted = blocks.map((b) => omitBlock(b, why));
  const omittedBytes = omitted.map(sizeOf);
  let total = sizeOf(head) + omittedBytes.reduce((s, n) => s + n, 0);
  if (total > maxBytes) {
    // not even the list fits: as many omitted blocks as do, and say so
    let out = '';
    let used = 0;
    for (const [k, b] of omitted.entries()) {
      if (used + (omittedBytes[k] as number) > maxBytes) break;
      out += b;
      used += omittedBytes[k] as number;
    }
    return { text: out, truncated: true };
  }
  const showWhole = new Set<number>();
  const bySize = blocks.map((_, k) => k).sort((x, y) => (whole[x] as number) - (omittedBytes[x] as number) - ((whole[y] as number) - (omittedBytes[y] as number)));
  for (const k of bySize) {
    const extra = (whole[k] as number) - (omittedBytes[k] as number);
    if (total + extra > maxBytes) break;
    total += extra;
    showWhole.add(k);
  }
  return { text: head + blocks.map((b, k) => (showWhole.has(k) ? b : omitted[k])).join(''), truncated: false };
}
