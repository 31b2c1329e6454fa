import { notLoadedReason } from '../api/errorNote';
import { ErrorMessage } from './ErrorMessage';

/** A read of a screen, by the name of what it shows ("Sources", "Latest tasks"), with its error if it failed. */
export interface NamedRead {
  name: string;
  error: unknown;
}

/** "Sources", "Sources and Executions", "Sources, Schedules and Executions". */
export function joinNames(names: readonly string[]): string {
  return names.length > 1 ? `${names.slice(0, -1).join(', ')} and ${names.at(-1)}` : (names[0] ?? '');
}

/** The failed reads grouped by their error: the same status and message (one service down, refusing or failing) is one. */
export function groupErrors(reads: readonly NamedRead[]): { error: unknown; names: string[] }[] {
  const groups = new Map<string, { error: unknown; names: string[] }>();
  for (const { name, error } of reads) {
    if (!error) continue;
    const key = error instanceof Error ? `${(error as { status?: number }).status ?? ''} ${error.message}` : String(error);
    const group = groups.get(key) ?? { error, names: [] };
    group.names.push(name);
    groups.set(key, group);
  }
  return [...groups.values()];
}

/**
 * A screen's errors, above its sections, each said once with Retry: one service down made each section say the whole
 * error (the Scheduler's four, the Agents' two, the Traces' two). An error of some of the reads names them ("Sources
 * and Executions could not be read: …"); a section it left empty says why in a few words (`notLoaded`).
 */
export function ScreenErrors({ reads, onRetry }: { reads: readonly NamedRead[]; onRetry: () => void }) {
  return (
    <>
      {groupErrors(reads).map((g) => (
        <ErrorMessage key={g.names.join()} error={g.error} subject={g.names.length < reads.length ? `${joinNames(g.names)} could not be read` : undefined} onRetry={onRetry} />
      ))}
    </>
  );
}

/** What a section left empty by `error` says, its error being said above by ScreenErrors; null without an error. */
export function NotLoaded({ error }: { error: unknown }) {
  return error ? <p className="muted">Not loaded: {notLoadedReason(error)} (above).</p> : null;
}
