/** The attempts of a task: status, agent, duration (counting while it runs), cost, changes (once it has ended); one is selected (shown below), two can be ticked for comparing. */
import type { AttemptSummary } from '../../api';
import { ListTable } from '../ListTable';
import { Name } from '../Name';
import { RowFacts } from '../RowFacts';
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
      wide={['Agent', 'Status', 'Duration', 'Cost', 'Changes']}
      // in a narrow box the column is as wide as its checkboxes, its name for screen readers only (task.css): the name
      // made it 5.5em wide, a third of a phone's row
      headers={{ Compare: <span className="compare-head">Compare</span> }}
      row={(a) => {
        const running = RUNNING_STATUSES.includes(a.status);
        const status = <span className={`status status-${a.status}`}>{a.status}</span>;
        const duration = <Elapsed id={a.id} seconds={a.duration} running={running} />;
        // counted when the run ends: "0 files +0 −0" sat beside a live diff of the agent's files
        const changes = running ? (
          <span className="muted">counted at the end</span>
        ) : (
          <>
            {a.filesChanged} {a.filesChanged === 1 ? 'file' : 'files'} <span className="add">+{a.linesAdded}</span> <span className="del">−{a.linesRemoved}</span>
          </>
        );
        return (
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
              {/* a narrow box (a phone): the other columns under the attempt's number (RowFacts), as on Projects; as
                  columns, the status was cut at the window's edge and the rest was past it */}
              <RowFacts
                label={`About attempt #${a.number}`}
                facts={[
                  { value: status },
                  { name: 'Agent', value: <Name>{a.llm}</Name> },
                  { name: 'Duration', value: duration },
                  { name: 'Cost', value: formatCost(a.cost) },
                  { name: 'Changes', value: changes },
                ]}
              />
            </td>
            <td className="wide-only">
              <Name>{a.llm}</Name>
            </td>
            <td className="wide-only">{status}</td>
            <td className="wide-only">{duration}</td>
            <td className="wide-only">{formatCost(a.cost)}</td>
            <td className="wide-only">{changes}</td>
          </tr>
        );
      }}
    />
  );
}
