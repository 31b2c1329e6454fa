/**
 * Settings: the API key this tab sends (set or clear), outbound webhooks with their delivery log, and the agent profiles
 * in use (projects' default profile and the multi-agent service's agents), in that order: nothing with a button sits
 * below a list of another service that may come later and push it. None of these has a stream: refetched on focus and
 * after each action (docs/ui.md).
 */
import { useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { ApiError, getApiKey, queryKeys, setApiKey, useErrorKept } from '../api';
import { useAgents } from '../api/agentsTraces';
import { useProjects } from '../api/projects';
import { createWebhook, deleteWebhook, type Receiver, type Webhook, WEBHOOK_EVENTS, useDeliveries, useWebhooks } from '../api/settings';
import { ConfirmDialog, Dialog, ErrorMessage, Field, formatDuration, ListTable, Name, RowFacts, showToast, useDocumentTitle } from '../components';

function ApiKeySection() {
  const qc = useQueryClient();
  const [stored, setStored] = useState(() => getApiKey());
  const [value, setValue] = useState('');
  // Save key with nothing typed: said at the field until a key is typed (it did nothing, without a word)
  const [triedEmpty, setTriedEmpty] = useState(false);
  // its first 4 and last 2 characters only for a key long enough that they say little of it (a 9-character key showed
  // 6 of its characters): a screen is shared, recorded, looked over
  const mask = (k: string) => (k.length >= 24 ? `${k.slice(0, 4)}…${k.slice(-2)}` : '••••');
  return (
    <section className="panel" aria-label="API key">
      <h2>API key</h2>
      <p className="muted">
        Kept for this browser tab only (sessionStorage) and sent as a bearer header. Stored key: <strong className="nowrap" data-testid="stored-key">{stored ? mask(stored) : 'none'}</strong>
      </p>
      <form
        className="filters"
        onSubmit={(e) => {
          e.preventDefault();
          const k = value.trim();
          if (!k) {
            setTriedEmpty(true);
            return;
          }
          setTriedEmpty(false);
          setApiKey(k);
          setStored(k);
          setValue('');
          showToast('info', 'API key saved');
          void qc.invalidateQueries();
        }}
      >
        <Field label="New key" inline error={triedEmpty && !value.trim() ? 'Type the key: it cannot be empty.' : null}>
          <input type="password" autoComplete="off" value={value} onChange={(e) => setValue(e.target.value)} />
        </Field>
        <button type="submit" className="primary">
          Save key
        </button>
        <button
          type="button"
          className="danger"
          disabled={!stored}
          onClick={() => {
            setApiKey(null);
            setStored(null);
            showToast('info', 'API key cleared');
          }}
        >
          Clear key
        </button>
      </form>
    </section>
  );
}

/**
 * Shown from the screen's first frame: the webhooks above it keep one height whatever they hold (`.reserved-list`), so
 * nothing they do moves it.
 */
function ProfilesSection() {
  // their errors stay while they are tried again (every 5 s while a service is down): they blinked away at each try
  const projects = useErrorKept(useProjects());
  const agents = useErrorKept(useAgents());
  const uses = new Map<string, string[]>();
  const add = (profile: string, by: string) => uses.set(profile, [...(uses.get(profile) ?? []), by]);
  for (const p of projects.data ?? []) if (p.defaultLLM) add(p.defaultLLM, `project ${p.name}`);
  for (const a of agents.data ?? []) add(a.llm, `agent ${a.name}`);
  // the list is known once both reads have answered: until then "Loading…", not the empty text (it said that no
  // profile was named while the projects and agents were still on their way); with both failed, only their errors
  const loading = projects.isPending || agents.isPending;
  const items = loading || (projects.isError && agents.isError) ? undefined : [...uses.entries()];
  const empty = agents.isError
    ? 'No project names a profile. The agents could not be read (above), so the profiles they name are not listed.'
    : projects.isError
      ? 'No agent names a profile. The projects could not be read (above), so the profiles they name are not listed.'
      : 'No project or agent names a profile (projects use the server default).';
  return (
    <section className="panel" aria-label="Agent profiles in use">
      <h2>Agent profiles in use</h2>
      <p className="muted">Profiles are defined in the config file (<code>agents</code>); this lists the ones projects and multi-agent agents name.</p>
      {projects.error ? <ErrorMessage error={projects.error} onRetry={() => void projects.refetch()} /> : null}
      {agents.error ? <ErrorMessage error={agents.error} onRetry={() => void agents.refetch()} /> : null}
      <ListTable
        label="Agent profiles"
        items={items}
        loading={loading}
        empty={empty}
        columns={['Profile', 'Used by']}
        row={([profile, by]) => (
          <tr key={profile} data-profile={profile}>
            <td className="mono">
              <Name>{profile}</Name>
            </td>
            <td>
              <Name>{by.join(', ')}</Name>
            </td>
          </tr>
        )}
      />
    </section>
  );
}

function NewWebhookDialog({ onClose }: { onClose: () => void }) {
  const qc = useQueryClient();
  const [url, setUrl] = useState('');
  const [secret, setSecret] = useState('');
  const [events, setEvents] = useState<string[]>(['task.status_changed']);
  const [error, setError] = useState<unknown>(null);
  // while the create waits for its answer: a second Enter or click would have made a second webhook
  const [busy, setBusy] = useState(false);
  return (
    <Dialog open title="New webhook" onClose={onClose}>
      <form
        onSubmit={async (e) => {
          e.preventDefault();
          if (busy) return;
          setBusy(true);
          setError(null);
          try {
            await createWebhook(url.trim(), events, secret);
            await qc.invalidateQueries({ queryKey: queryKeys.webhooks() });
            onClose();
          } catch (err) {
            setError(err);
          } finally {
            setBusy(false);
          }
        }}
      >
        <label className="field">
          <span>URL</span>
          <input data-autofocus required value={url} onChange={(e) => setUrl(e.target.value)} placeholder="https://example.com/hook" />
        </label>
        <label className="field">
          <span>Secret</span>
          <input type="password" required autoComplete="off" value={secret} onChange={(e) => setSecret(e.target.value)} />
        </label>
        <fieldset className="event-list">
          <legend>Events</legend>
          {WEBHOOK_EVENTS.map((ev) => (
            <label key={ev}>
              <input
                type="checkbox"
                checked={events.includes(ev)}
                onChange={(e) => setEvents(e.target.checked ? [...events, ev] : events.filter((x) => x !== ev))}
              />{' '}
              {ev}
            </label>
          ))}
        </fieldset>
        {error ? <ErrorMessage error={error} action /> : null}
        <div className="dialog-actions">
          <button type="button" onClick={onClose}>
            Cancel
          </button>
          <button type="submit" className="primary" disabled={busy}>
            {busy ? 'Creating…' : 'Create webhook'}
          </button>
        </div>
      </form>
    </Dialog>
  );
}

function DeliveryLog({ webhook }: { webhook: Webhook }) {
  const d = useDeliveries(webhook.id);
  return (
    <div className="delivery-log">
      <h3>Deliveries of {webhook.url}</h3>
      {d.error ? <ErrorMessage error={d.error} onRetry={() => void d.refetch()} /> : null}
      <ListTable
        label="Deliveries"
        items={d.data}
        loading={d.isPending}
        empty="No deliveries yet."
        columns={['When', 'Event', 'Try', 'Result', 'Duration']}
        numeric={['Try', 'Duration']}
        row={(x) => (
          <tr key={x.id}>
            <td>{new Date(x.createdAt).toLocaleString()}</td>
            <td>{x.event}</td>
            <td className="num" title={x.probe ? "A probe: it tried the receiver for all of this webhook's held-back deliveries" : undefined}>
              {x.attempt}
              {x.probe ? ' (probe)' : null}
            </td>
            <td className="long-text">
              <span className={`badge ${x.success ? 'health-ok' : 'health-bad'}`}>{x.statusCode ?? 'no answer'}</span>
              {x.error ? <span className="muted"> {x.error}</span> : null}
            </td>
            {/* how long the try took, in the board's words ("0.1 s", "< 0.1 s", "10.0 s"), as the Scheduler's
                executions and the attempts say it: it said "83 ms", under a header "Time" beside When */}
            <td className="num">{formatDuration(x.durationMs / 1000)}</td>
          </tr>
        )}
      />
    </div>
  );
}

/** ok, or failing since when, and while deliveries are held back, when the next probe may go. */
function ReceiverState({ receiver }: { receiver: Receiver | undefined }) {
  if (!receiver || receiver.state === 'ok') return <span className="badge health-ok">ok</span>;
  const since = receiver.failingSince ? ` since ${new Date(receiver.failingSince).toLocaleString()}` : '';
  const tries = `${receiver.consecutiveFailures} failed ${receiver.consecutiveFailures === 1 ? 'try' : 'tries'} in a row`;
  const held = receiver.nextProbeAt ? `; deliveries held back, next try ${new Date(receiver.nextProbeAt).toLocaleTimeString()}` : '';
  return (
    <>
      <span className="badge health-bad">failing</span>
      <span className="muted">
        {since} ({tries}
        {held})
      </span>
    </>
  );
}

function WebhooksSection() {
  const qc = useQueryClient();
  const hooks = useErrorKept(useWebhooks());
  const [creating, setCreating] = useState(false);
  const [open, setOpen] = useState<Webhook | null>(null);
  const [deleting, setDeleting] = useState<Webhook | null>(null);
  const [deleteBusy, setDeleteBusy] = useState(false);
  const [deleteError, setDeleteError] = useState<unknown>(null);
  return (
    <section className="panel" aria-label="Webhooks">
      <div className="toolbar">
        <h2>Webhooks</h2>
        <button type="button" className="primary" onClick={() => setCreating(true)}>
          New webhook
        </button>
      </div>
      {/* one height whatever it holds (Loading…, an error, the empty text, the rows; more rows scroll inside it), so the
          profiles below never move: they moved once when a list that had failed came at last, its rows replacing the
          error (and, shown at once, they were pushed down by the first answer) */}
      <div className="reserved-list" data-testid="webhook-list-box">
        {hooks.error ? <ErrorMessage error={hooks.error} onRetry={() => void hooks.refetch()} /> : null}
        <ListTable
          label="Webhook list"
          items={hooks.data}
          loading={hooks.isPending}
          empty="No webhooks yet. New webhook sends this board's task events to a URL of yours, signed with its secret."
          columns={['URL', 'Events', 'Active', 'Receiver']}
          wide={['Events', 'Active', 'Receiver']}
          actions
          row={(w) => (
            <tr key={w.id} data-webhook={w.url}>
              {/* a narrow box (a phone): the other columns under the URL (RowFacts), as on Projects and Approvals; as
                  columns, they scrolled sideways under the pinned Deliveries and Delete */}
              <td className="long-text">
                <span className="mono">{w.url}</span>
                <RowFacts
                  label={`About webhook ${w.url}`}
                  facts={[
                    { name: 'Receiver', value: <ReceiverState receiver={w.receiver} />, wraps: true },
                    { name: 'Events', value: w.events.join(', '), wraps: true },
                    { name: 'Active', value: w.active ? 'yes' : 'no' },
                  ]}
                />
              </td>
              <td className="wide-only">{w.events.join(', ')}</td>
              <td className="wide-only">{w.active ? 'yes' : 'no'}</td>
              <td className="wide-only">
                <ReceiverState receiver={w.receiver} />
              </td>
              <td className="actions-cell">
                <button type="button" className="small" aria-pressed={open?.id === w.id} onClick={() => setOpen(open?.id === w.id ? null : w)}>
                  Deliveries
                </button>
                <button type="button" className="small danger" aria-label={`Delete webhook ${w.url}`} onClick={() => setDeleting(w)}>
                  Delete
                </button>
              </td>
            </tr>
          )}
        />
      </div>
      {open ? <DeliveryLog webhook={open} /> : null}
      {creating ? <NewWebhookDialog onClose={() => setCreating(false)} /> : null}
      <ConfirmDialog
        open={deleting !== null}
        title="Delete webhook"
        message={`Stop sending events to ${deleting?.url ?? ''}?`}
        confirmLabel="Delete"
        danger
        busy={deleteBusy}
        error={deleteError}
        onCancel={() => {
          setDeleting(null);
          setDeleteError(null);
        }}
        onConfirm={async () => {
          const w = deleting;
          if (!w || deleteBusy) return;
          // the dialog stays, its button off, until the answer: a refusal is said in it (it was a toast under the
          // closed dialog), and a second Enter sends nothing
          setDeleteBusy(true);
          setDeleteError(null);
          try {
            await deleteWebhook(w.id);
            if (open?.id === w.id) setOpen(null);
            // its deliveries are gone with it: not read again (a 404) while its log closes
            qc.removeQueries({ queryKey: [...queryKeys.webhooks(), w.id] });
            setDeleting(null);
          } catch (err) {
            // deleted elsewhere meanwhile (another tab, the API): what Delete wanted is done; the list drops it below
            if (err instanceof ApiError && err.status === 404) {
              if (open?.id === w.id) setOpen(null);
              qc.removeQueries({ queryKey: [...queryKeys.webhooks(), w.id] });
              setDeleting(null);
              showToast('info', `${w.url} was already deleted (elsewhere)`);
            } else setDeleteError(err);
          } finally {
            setDeleteBusy(false);
          }
          await qc.invalidateQueries({ queryKey: queryKeys.webhooks(), exact: true });
        }}
      />
    </section>
  );
}

export function SettingsPage() {
  useDocumentTitle('Settings');
  return (
    <div className="stack">
      <div className="page-head">
        <h1>Settings</h1>
      </div>
      <ApiKeySection />
      {/* the webhooks (their buttons) above the profiles: the profiles' list comes when the multi-agent service answers,
          often last, and above the webhooks it grew and moved them under the pointer (a click landed beside its button);
          below them, it stays put: the webhooks' list keeps one height */}
      <WebhooksSection />
      <ProfilesSection />
    </div>
  );
}
