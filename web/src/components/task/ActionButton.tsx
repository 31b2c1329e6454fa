import { useId } from 'react';

/**
 * A button of the attempt's actions that is disabled, with the reason beside it and describing it, when the task
 * service would refuse what it does (Merge…, Create PR…).
 */
export function ActionButton({ label, refusal, primary, onClick }: { label: string; refusal: string | null; primary?: boolean; onClick: () => void }) {
  const reasonId = useId();
  return (
    <>
      <button type="button" className={primary ? 'primary' : undefined} disabled={refusal !== null} aria-describedby={refusal ? reasonId : undefined} onClick={onClick}>
        {label}
      </button>
      {refusal ? (
        <span id={reasonId} className="muted merge-refusal">
          {refusal}
        </span>
      ) : null}
    </>
  );
}
