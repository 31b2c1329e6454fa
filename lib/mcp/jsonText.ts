/**
 * Editing a JSON (or JSONC: comments, trailing commas) config file as text: one member set or removed, everything
 * else kept byte for byte — comments, indentation, key order, and numbers JavaScript cannot hold (`1e400`,
 * `12345678901234567890`), which a parse-and-stringify round trip turned into `null` and `12345678901234567000`.
 */
import { applyEdits, type Node, modify, parseTree, printParseErrorCode, type ParseError } from 'jsonc-parser';

export type ParsedText = { ok: true; data: Record<string, unknown> } | { ok: false; reason: string };

/** A node's value with every object member an own property (`__proto__` included), as JSON.parse builds them. */
function nodeValue(node: Node): unknown {
  switch (node.type) {
    case 'object':
      return Object.fromEntries((node.children ?? []).map((member) => [member.children?.[0]?.value as string, member.children?.[1] ? nodeValue(member.children[1]) : undefined]));
    case 'array':
      return (node.children ?? []).map(nodeValue);
    default:
      return node.value;
  }
}

/** Parses JSON with comments and trailing commas allowed; the top level must be an object. */
export function parseJsonText(text: string): ParsedText {
  const errors: ParseError[] = [];
  const tree = parseTree(text, errors, PARSE_OPTIONS);
  const first = errors[0];
  if (first) {
    const before = text.slice(0, first.offset);
    const line = before.split('\n').length;
    const column = first.offset - before.lastIndexOf('\n');
    return { ok: false, reason: `${printParseErrorCode(first.error)} at line ${line} column ${column}` };
  }
  if (tree?.type !== 'object') return { ok: false, reason: 'the top level is not a JSON object' };
  return { ok: true, data: nodeValue(tree) as Record<string, unknown> };
}

/** The file's own indentation (the first indented member), so an added entry looks like its neighbours. */
function indentationOf(text: string): { insertSpaces: boolean; tabSize: number } {
  const m = /\n([ \t]+)["}\]]/.exec(text);
  if (m?.[1]?.startsWith('\t')) return { insertSpaces: false, tabSize: 1 };
  return { insertSpaces: true, tabSize: m?.[1]?.length ?? 2 };
}

const PARSE_OPTIONS = { allowTrailingComma: true, disallowComments: false, allowEmptyContent: false };

/** The members of an object node named `key` (more than one when the text writes the key twice). */
function membersNamed(node: Node | undefined, key: string): Node[] {
  return node?.type === 'object' ? (node.children ?? []).filter((member) => member.children?.[0]?.value === key) : [];
}

/**
 * The first key on the way to `path`'s member (its parent objects, not the member itself) that one object of
 * `text` writes more than once, with the lines it is on; undefined when there is none. Readers (editors,
 * JSON.parse) take the last of them, while an edit would go to the first, which no reader sees.
 */
export function duplicatedParent(text: string, path: string[]): { key: string; lines: number[] } | undefined {
  let node = parseTree(text, [], PARSE_OPTIONS);
  for (const key of path.slice(0, -1)) {
    const found = membersNamed(node, key);
    if (found.length > 1) return { key, lines: found.map((m) => text.slice(0, m.offset).split('\n').length) };
    node = found[0]?.children?.[1];
  }
  return undefined;
}

/**
 * `text` with the member at `path` set to `value` (undefined: removed), the rest of the text unchanged. Copies of the
 * member written earlier in the same object (shadowed: readers take the last) are removed with it, so the member
 * readers see is the one set, and a removed member is gone (jsonc-parser edits the first copy: an added server was
 * written into a copy no editor reads, and `remove` left the copy editors read). Parents written twice: duplicatedParent.
 */
export function setMember(text: string, path: string[], value: unknown): string {
  const eol = text.includes('\r\n') ? '\r\n' : '\n';
  const options = { formattingOptions: { ...indentationOf(text), eol } };
  let parent = parseTree(text, [], PARSE_OPTIONS);
  for (const key of path.slice(0, -1)) parent = membersNamed(parent, key)[0]?.children?.[1];
  let out = text;
  for (let copies = membersNamed(parent, path.at(-1) ?? '').length; copies > 1; copies--) out = applyEdits(out, modify(out, path, undefined, options));
  return applyEdits(out, modify(out, path, value, options));
}
