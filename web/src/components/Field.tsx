import { cloneElement, type ReactElement, useId } from 'react';

/**
 * A labelled control: `<label for>` tied to the control by id, so the control's accessible name is exactly the
 * label (a select or input nested inside its label would add its value to the name). `error` is shown under the
 * control, which is marked invalid and described by it.
 */
export function Field({ label, inline, grow, error, children }: { label: string; inline?: boolean; grow?: boolean; error?: string | null; children: ReactElement<{ id?: string; 'aria-invalid'?: boolean; 'aria-describedby'?: string }> }) {
  const id = useId();
  const errorId = `${id}-error`;
  return (
    <div className={`field${inline ? ' inline' : ''}${grow ? ' grow' : ''}`}>
      <label htmlFor={id}>{label}</label>
      {cloneElement(children, error ? { id, 'aria-invalid': true, 'aria-describedby': errorId } : { id })}
      {error ? (
        <p id={errorId} className="field-error" role="alert">
          {error}
        </p>
      ) : null}
    </div>
  );
}
