/** Two attempts side by side (POST /api/attempts/compare): duration, cost, size of change, and which files each touched. */
import { useQuery } from '@tanstack/react-query';
import { api } from '../../api';
import { Dialog } from '../Dialog';
import { ErrorMessage } from '../ErrorMessage';
import { ListTable } from '../ListTable';
import { Name } from '../Name';
import { formatCost } from '../money';
import { type CompareResult, formatDuration } from './taskTypes';

export function CompareDialog({ open, attemptIds, numbers, onClose }: { open: boolean; attemptIds: [string, string]; numbers: Record<string, number>; onClose: () => void }) {
  const cmp = useQuery({
    queryKey: ['attempts', 'compare', ...attemptIds],
    queryFn: ({ signal }) => api<CompareResult>('/attempts/compare', { method: 'POST', body: { attemptIds }, signal }),
    enabled: open,
    meta: { inlineError: true },
  });
  const label = (id: string | null) => (id ? `#${numbers[id] ?? '?'}` : 'same');
  const c = cmp.data?.comparison;
  return (
    <Dialog open={open} title="Compare attempts" onClose={onClose} className="dialog-wide">
      {cmp.error ? <ErrorMessage error={cmp.error} /> : null}
      {cmp.data && c ? (
        <>
          <ListTable
            label="Compared attempts"
            items={cmp.data.attempts}
            empty="No attempts to compare."
            columns={['Attempt', 'Agent', 'Status', 'Duration', 'Cost', 'Files', 'Lines']}
            row={(a) => (
              <tr key={a.id}>
                <td>#{numbers[a.id] ?? '?'}</td>
                <td>
                  <Name>{a.llm}</Name>
                </td>
                <td>{a.status}</td>
                <td>{formatDuration(a.duration)}</td>
                <td>{formatCost(a.cost)}</td>
                <td>{a.filesChanged}</td>
                <td>
                  <span className="add">+{a.linesAdded}</span> <span className="del">−{a.linesRemoved}</span>
                </td>
              </tr>
            )}
          />
          <p>
            Faster: {label(c.fasterAttemptId)} · cheaper: {label(c.cheaperAttemptId)} · smaller change: {label(c.smallerChangeAttemptId)}
          </p>
          <div className="compare-files">
            {[
              ['In both', c.commonFiles],
              [`Only in ${label(attemptIds[0])}`, c.onlyInFirst],
              [`Only in ${label(attemptIds[1])}`, c.onlyInSecond],
            ].map(([title, files]) => (
              <div key={title as string}>
                <h3>{title as string}</h3>
                {(files as string[]).length ? (
                  <ul>
                    {(files as string[]).map((f) => (
                      <li key={f}>
                        <code>{f}</code>
                      </li>
                    ))}
                  </ul>
                ) : (
                  <p className="muted">none</p>
                )}
              </div>
            ))}
          </div>
        </>
      ) : null}
      <div className="dialog-actions">
        <button type="button" className="primary" onClick={onClose} data-autofocus>
          Close
        </button>
      </div>
    </Dialog>
  );
}
