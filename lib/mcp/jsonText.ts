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
  const tree = parseTree(text, errors, { allowTrailingComma: true, disallowComments: false, allowEmptyContent: false });
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

/** `text` with the member at `path` set to `value` (undefined: removed), the rest of the text unchanged. */
export function setMember(text: string, path: string[], value: unknown): string {
  const eol = text.includes('\r\n') ? '\r\n' : '\n';
  const edits = modify(text, path, value, { formattingOptions: { ...indentationOf(text), eol } });
  return applyEdits(text, edits);
}
