/** The longest word of a name kept whole: about 170 px, which a column of a phone's table can give it. */
const WHOLE_UP_TO = 24;

/**
 * A name in a table (a workflow's, an agent's, a source type, a profile, a project's): each of its words up to 24
 * characters is kept whole (`.nowrap`), so a narrow column does not break it at its hyphen ("nightly-/report",
 * "ui-/helper", "flow-/builder"); it wraps between its words, and a longer word wraps where it must (at a hyphen, or
 * anywhere in a `long-text` cell). Only spans are added: the text is the name's, as copied and as read.
 */
export function Name({ children }: { children: string }) {
  const parts = children.split(/(\s+)/);
  return (
    <>
      {parts.map((part, i) =>
        part.length > 1 && part.length <= WHOLE_UP_TO && /[-‐‑]/.test(part) && !/\s/.test(part) ? (
          // biome-ignore lint/suspicious/noArrayIndexKey: the parts of one fixed string, in their order
          <span key={i} className="nowrap">
            {part}
          </span>
        ) : (
          part
        ),
      )}
    </>
  );
}
