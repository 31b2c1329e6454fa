/** The attempts of a task: status, agent, duration (counting while it runs), cost, changes (once it has ended); one is selected (shown below), two can be ticked for comparing. */
import type { AttemptSummary } from '../../api';
import { ListTable } from '../ListTable';
import { Name } from '../Name';
import { formatCost } from '../money';
import { Elapsed } from './Elapsed';
import { RUNNING_STATUSES } from './taskTypes';

export interface AttemptTableProps {
  attempts: AttemptSummary[];
  selectedId: string | null;
  onSelect: (id: string) => void;
  compareIds: string[];
  onToggleCompare: (id: string) => void;
}

export function AttemptTable({ attempts, selectedId, onSelect, compareIds, onToggleCompare }: AttemptTableProps) {
  return (
    <ListTable
      label="Attempts"
      className="attempt-table"
      items={[...attempts].sort((a, b) => b.number - a.number)}
      empty={<span className="muted">No attempts yet. Start attempt… runs an agent on this task.</span>}
      columns={['Compare', 'Attempt', 'Agent', 'Status', 'Duration', 'Cost', 'Changes']}
      row={(a) => (
        <tr key={a.id} className={a.id === selectedId ? 'selected' : undefined}>
          <td>
            <input
              type="checkbox"
              aria-label={`Compare attempt #${a.number}`}
              checked={compareIds.includes(a.id)}
              disabled={!compareIds.includes(a.id) && compareIds.length >= 2}
              onChange={() => onToggleCompare(a.id)}
            />
          </td>
          <td>
            <button type="button" className="link-button" onClick={() => onSelect(a.id)} aria-current={a.id === selectedId ? 'true' : undefined}>
              #{a.number}
            </button>
          </td>
          <td>
            <Name>{a.llm}</Name>
          </td>
          <td>
            <span className={`status status-${a.status}`}>{a.status}</span>
          </td>
          <td>
            <Elapsed id={a.id} seconds={a.duration} running={RUNNING_STATUSES.includes(a.status)} />
          </td>
          <td>{formatCost(a.cost)}</td>
          <td>
            {/* counted when the run ends: "0 files +0 −0" sat beside a live diff of the agent's files */}
            {RUNNING_STATUSES.includes(a.status) ? (
              <span className="muted">counted at the end</span>
            ) : (
              <>
                {a.filesChanged} {a.filesChanged === 1 ? 'file' : 'files'} <span className="add">+{a.linesAdded}</span> <span className="del">−{a.linesRemoved}</span>
              </>
            )}
          </td>
        </tr>
      )}
    />
  );
}
