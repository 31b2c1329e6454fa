/**
 * Agents: each agent of the multi-agent service with its status and queue, assigning a task to one, and the latest
 * tasks. The service has no event stream: refetched when the window gets focus and after an assignment (docs/ui.md).
 */
import { useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { type Agent, assignAgentTask, useAgentStatuses, useAgents, useAgentTasks } from '../api/agentsTraces';
import { queryKeys, useErrorKept } from '../api';
import { Dialog, ErrorMessage, ListTable, Name, NotLoaded, RowFacts, ScreenErrors, showToast, useDocumentTitle } from '../components';

function AssignDialog({ agent, onClose }: { agent: Agent; onClose: () => void }) {
  const qc = useQueryClient();
  const [task, setTask] = useState('');
  const [priority, setPriority] = useState('normal');
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  return (
    <Dialog open title={`Assign a task to ${agent.name}`} onClose={onClose}>
      <form
        onSubmit={async (e) => {
          e.preventDefault();
          setBusy(true);
          setError(null);
          try {
            const sent = task.trim();
            await assignAgentTask(agent.name, sent, priority);
            // the task's own words, not its id (which nothing on the screen shows)
            const text = sent.length > 60 ? `${sent.slice(0, 60)}…` : sent;
            showToast('info', `Assigned to ${agent.name}: ${text}`);
            await qc.invalidateQueries({ queryKey: queryKeys.agents() });
            onClose();
          } catch (err) {
            setError(err);
          } finally {
            setBusy(false);
          }
        }}
      >
        <label className="field">
          <span>Task</span>
          <input data-autofocus required value={task} onChange={(e) => setTask(e.target.value)} maxLength={100_000} />
        </label>
        <label className="field">
          <span>Priority</span>
          <select value={priority} onChange={(e) => setPriority(e.target.value)}>
            <option value="high">high</option>
            <option value="normal">normal</option>
            <option value="low">low</option>
          </select>
        </label>
        {error ? <ErrorMessage error={error} action /> : null}
        <div className="dialog-actions">
          <button type="button" onClick={onClose}>
            Cancel
          </button>
          <button type="submit" className="primary" disabled={busy}>
            Assign
          </button>
        </div>
      </form>
    </Dialog>
  );
}

export function AgentsPage() {
  useDocumentTitle('Agents');
  const qc = useQueryClient();
  // their errors stay while they are tried again (every 5 s while the service is down): they blinked away at each try
  const agents = useErrorKept(useAgents());
  const statuses = useAgentStatuses((agents.data ?? []).map((a) => a.name));
  // the agents' status reads: their error is said with the others (they failed silently, the rows showing "—"), the
  // first of them standing for all (one service answers them), kept through the tries like the others
  const statusRead = useErrorKept({
    error: statuses.find((s) => s.error)?.error ?? null,
    isPending: statuses.some((s) => s.isPending),
    isFetching: statuses.some((s) => s.isFetching),
  });
  const tasks = useErrorKept(useAgentTasks());
  const [assigning, setAssigning] = useState<Agent | null>(null);
  return (
    <div className="stack">
      <div className="page-head">
        <h1>Agents</h1>
      </div>
      {/* one error for both lists when the service is down (each list said it) */}
      <ScreenErrors
        reads={[
          { name: 'Agents', error: agents.error },
          { name: 'Latest tasks', error: tasks.error },
          // read once the agents are: without them there are none, and the screen's error is the agents' own
          ...(agents.data ? [{ name: 'Agent statuses', error: statusRead.error }] : []),
        ]}
        onRetry={() => void qc.invalidateQueries({ queryKey: queryKeys.agents() })}
      />
      <section className="panel" aria-label="Agents">
        <h2>Status and queues</h2>
        <NotLoaded error={agents.data ? null : agents.error} />
        <ListTable
          label="Agents"
          items={agents.data}
          loading={agents.isPending}
          empty={
            <>
              No agents are configured. Name them under <code>multiAgent.agents</code> in the config file (docs/configuration.md).
            </>
          }
          columns={['Agent', 'Role', 'Model', 'Status', 'Current task', 'Queued', 'Done / failed']}
          numeric={['Queued', 'Done / failed']}
          wide={['Role', 'Model', 'Status', 'Current task', 'Queued', 'Done / failed']}
          actions
          row={(a, i) => {
            const st = statuses[i]?.data;
            const current = st?.currentTask ? (tasks.data?.find((t) => t.taskId === st.currentTask)?.task ?? st.currentTask) : null;
            const status = <span className={`badge agent-${a.status}`}>{a.status}</span>;
            const done = st ? `${st.tasksCompleted} / ${st.tasksFailed}` : '—';
            return (
              <tr key={a.name} data-agent={a.name}>
                {/* a narrow box (a phone): the other columns under the name (RowFacts), as on Projects and Approvals;
                    as columns, they scrolled sideways under the pinned Assign task */}
                <td className="long-text">
                  <Name>{a.name}</Name>
                  <RowFacts
                    label={`About ${a.name}`}
                    // the short facts first, beside the status; the role, which may be a sentence, last: first after the
                    // status, a long one went onto a line of its own and left the status alone on its line. Done and
                    // failed are two facts, each short enough to share a line: as one, "Done / failed 1 / 0" did not
                    // fit beside the status and the queue at 375 px, and stood alone on a line of its own
                    facts={[
                      { value: status },
                      { name: 'Queued', value: st?.queued ?? '—' },
                      { name: 'Done', value: st?.tasksCompleted ?? '—' },
                      { name: 'Failed', value: st?.tasksFailed ?? '—' },
                      { name: 'Model', value: <span className="mono">{a.llm}</span>, wraps: true },
                      { name: 'Role', value: a.role, wraps: true },
                    ]}
                  >
                    {current ? (
                      <div className="clamp" title={current}>
                        <span className="muted">Current task</span> {current}
                      </div>
                    ) : null}
                  </RowFacts>
                </td>
                <td className="wide-only">{a.role}</td>
                <td className="mono wide-only">
                  <Name>{a.llm}</Name>
                </td>
                <td className="wide-only">{status}</td>
                <td className="long-text wide-only" title={current ?? undefined}>
                  <div className="clamp">{current ?? '—'}</div>
                </td>
                <td className="num wide-only">{st?.queued ?? '—'}</td>
                <td className="num wide-only">{done}</td>
                <td className="actions-cell">
                  <button type="button" className="small primary" aria-label={`Assign a task to ${a.name}`} onClick={() => setAssigning(a)}>
                    Assign task
                  </button>
                </td>
              </tr>
            );
          }}
        />
      </section>
      <section className="panel" aria-label="Latest agent tasks">
        <h2>Latest tasks</h2>
        <NotLoaded error={tasks.data ? null : tasks.error} />
        <ListTable
          label="Latest tasks"
          items={tasks.data}
          loading={tasks.isPending}
          empty="No tasks yet. Assign task, on an agent above, gives it one."
          columns={['Agent task', 'Agent', 'Task', 'Priority', 'Status', 'Created']}
          wide={['Agent', 'Task', 'Priority', 'Status', 'Created']}
          narrow={['Agent task']}
          row={(t) => {
            const created = new Date(t.createdAt).toLocaleString();
            const error = t.error ? (
              <div className="muted clamp" title={t.error}>
                {t.error}
              </div>
            ) : null;
            return (
              <tr key={t.taskId} data-agent-task={t.taskId}>
                {/* a narrow box (a phone): the task, the row's main text, and the rest under it, one column (as the
                    trace list does); as five columns the task was a narrow strip, and the rest scrolled sideways */}
                <td className="narrow-col long-text" title={t.task}>
                  <div className="clamp">{t.task}</div>
                  <RowFacts
                    label={`About the task of ${t.agent}`}
                    always
                    facts={[
                      { name: 'Status', value: t.status },
                      { name: 'Agent', value: <Name>{t.agent}</Name> },
                      { name: 'Priority', value: t.priority },
                      { name: 'Created', value: created, wraps: true },
                    ]}
                  >
                    {error}
                  </RowFacts>
                </td>
                <td className="wide-only">
                  <Name>{t.agent}</Name>
                </td>
                <td className="long-text wide-only" title={t.task}>
                  <div className="clamp">{t.task}</div>
                </td>
                <td className="wide-only">{t.priority}</td>
                <td className="long-text wide-only">
                  {t.status}
                  {error}
                </td>
                <td className="wide-only">{created}</td>
              </tr>
            );
          }}
        />
      </section>
      {assigning ? <AssignDialog agent={assigning} onClose={() => setAssigning(null)} /> : null}
    </div>
  );
}
