import { useEffect, useRef, useState } from 'react';
import { Field } from '../../components';
import { labelsOf } from './columns';

/**
 * The board's Labels filter: typed as text ("bug, ui"), applied as the labels it names. The text stays as typed (it
 * was rewritten from the labels at each key, which ate the comma or space being typed, so only one single-word label
 * could be typed), and shows the URL's labels when those change otherwise (Clear filters, the browser's Back). The
 * URL follows the typing a little later: the labels this field sent are its own echo when they come back, not a change.
 */
export function LabelsFilter({ labels, onChange }: { labels: string[]; onChange: (labels: string[]) => void }) {
  const key = labels.join(',');
  const [text, setText] = useState(() => labels.join(', '));
  // the label lists sent to the URL that it has not shown yet, oldest first
  const sent = useRef<string[]>([]);
  useEffect(() => {
    const echo = sent.current.indexOf(key);
    if (echo >= 0) {
      sent.current.splice(0, echo + 1);
      return;
    }
    setText((typed) => (labelsOf(typed).join(',') === key ? typed : key.split(',').filter(Boolean).join(', ')));
  }, [key]);
  return (
    <Field label="Labels" inline>
      <input
        value={text}
        placeholder="bug, ui"
        onChange={(e) => {
          const next = labelsOf(e.target.value);
          const nextKey = next.join(',');
          setText(e.target.value);
          if (nextKey !== (sent.current.at(-1) ?? key)) {
            sent.current.push(nextKey);
            onChange(next);
          }
        }}
      />
    </Field>
  );
}
