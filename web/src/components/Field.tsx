import { cloneElement, type ReactElement, useId } from 'react';

/**
 * A labelled control: `<label for>` tied to the control by id, so the control's accessible name is exactly the
 * label (a select or input nested inside its label would add its value to the name).
 */
export function Field({ label, inline, grow, children }: { label: string; inline?: boolean; grow?: boolean; children: ReactElement<{ id?: string }> }) {
  const id = useId();
  return (
    <div className={`field${inline ? ' inline' : ''}${grow ? ' grow' : ''}`}>
      <label htmlFor={id}>{label}</label>
      {cloneElement(children, { id })}
    </div>
  );
}
