import { useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import { FormError, ShownOnce } from '../../../components/Form.tsx';
import { $api, fetchClient, type Schemas } from '../../../lib/api.ts';
import { useAction, when } from '../api.ts';
import { ACTIONS, describeCondition, newWorkflow, TRIGGERS, workflowDraft } from '../workflows.ts';
import { useChoices, WorkflowForm } from './WorkflowForm.tsx';

const FLOWS = '/v1/workflows';
const SKIPPED: Record<string, string> = { conditions: 'its conditions did not hold', disabled: 'it was turned off', depth: 'started by workflows three deep' };

export default function WorkflowsSettings() {
  const flows = useQuery($api.queryOptions('get', FLOWS, { params: { query: { limit: 100 } } }));
  const [secret, setSecret] = useState<{ label: string; value: string }>();
  const create = useAction((body: Schemas['WorkflowCreate']) => fetchClient.POST(FLOWS, { body }), [FLOWS], (w) => {
    // The secret signs the posts of webhook actions; it is worth showing only to a workflow that has one.
    if (w.actions.some((a) => a.type === 'webhook')) setSecret({ label: `Signing secret of ${w.name}.`, value: w.secret });
  });
  return (
    <>
      <p className="muted">When something happens, and the conditions hold, the actions run: an automatic answer, a priority, a label, a transfer.</p>
      {secret && <ShownOnce label={secret.label} value={secret.value} onDone={() => setSecret(undefined)} />}
      <WorkflowForm
        initial={newWorkflow()}
        blank={newWorkflow}
        label="New workflow"
        submitLabel="Add workflow"
        error={create.error}
        pending={create.isPending}
        onSubmit={(body, done) => create.mutate(body, { onSuccess: done })}
      />
      <ul className="cards">
        {(flows.data?.data ?? []).map((w) => (
          <Flow key={w.id} flow={w} onSecret={(value) => setSecret({ label: `New signing secret of ${w.name}.`, value })} />
        ))}
      </ul>
    </>
  );
}

function Flow({ flow: w, onSecret }: { flow: Schemas['Workflow']; onSecret: (secret: string) => void }) {
  const [runsOpen, setRunsOpen] = useState(false);
  const [editing, setEditing] = useState(false);
  const { nameOf } = useChoices();
  const path = { params: { path: { id: w.id } } };
  const update = useAction((body: Schemas['WorkflowUpdate']) => fetchClient.PATCH('/v1/workflows/{id}', { ...path, body }), [FLOWS]);
  const change = useAction((body: Schemas['WorkflowUpdate']) => fetchClient.PATCH('/v1/workflows/{id}', { ...path, body }), [FLOWS], () => setEditing(false));
  const remove = useAction(() => fetchClient.DELETE('/v1/workflows/{id}', path), [FLOWS]);
  const rotate = useAction(() => fetchClient.POST('/v1/workflows/{id}/rotate-secret', path), [], (s) => onSecret(s.secret));
  const conditions = (w.conditions ?? []).map((c) => describeCondition(c, nameOf));
  const actions = w.actions.map((a) => {
    const label = ACTIONS[a.type] ?? a.type;
    if (a.type === 'add_label' || a.type === 'remove_label') return `${label} ${nameOf('conversation.labels', a.label_id)}`;
    if (a.type === 'transfer') return `${label} ${nameOf('conversation.department_id', a.department_id)}`;
    if (a.type === 'set_priority') return `${label} to ${a.priority}`;
    return label;
  });
  return (
    <li className="card" aria-label={w.name}>
      <div className="card-head">
        <strong>{w.name}</strong> <span>{TRIGGERS[w.trigger.type]}</span> <span className={w.enabled ? 'ok' : 'warn'}>{w.enabled ? 'On' : 'Off'}</span>
      </div>
      <p className="muted">
        {conditions.length > 0 ? `If ${conditions.join(' and ')}` : 'Every time'} → {actions.join(', then ')}
      </p>
      <div className="buttons">
        <button type="button" aria-expanded={editing} onClick={() => setEditing(!editing)}>
          Edit {w.name}
        </button>
        <button type="button" onClick={() => update.mutate({ enabled: !w.enabled })}>
          {w.enabled ? 'Turn off' : 'Turn on'} {w.name}
        </button>
        <button type="button" aria-expanded={runsOpen} onClick={() => setRunsOpen(!runsOpen)}>
          Runs of {w.name}
        </button>
        {w.actions.some((a) => a.type === 'webhook') && (
          <button type="button" onClick={() => rotate.mutate(undefined)}>
            New signing secret for {w.name}
          </button>
        )}
        <button type="button" className="danger" onClick={() => remove.mutate(undefined)}>
          Delete {w.name}
        </button>
      </div>
      <FormError error={update.error ?? remove.error ?? rotate.error} fields={[]} />
      {editing && (
        <WorkflowForm
          initial={workflowDraft(w)}
          label={`Edit ${w.name}`}
          submitLabel="Save workflow"
          error={change.error}
          pending={change.isPending}
          onSubmit={(body) => change.mutate(body)}
          onCancel={() => setEditing(false)}
        />
      )}
      {runsOpen && <Runs id={w.id} />}
    </li>
  );
}

function Runs({ id }: { id: string }) {
  const runs = useQuery($api.queryOptions('get', '/v1/workflows/{id}/runs', { params: { path: { id }, query: { limit: 20 } } }));
  const rows = runs.data?.data ?? [];
  if (rows.length === 0) return <p className="muted">No runs yet.</p>;
  return (
    <table className="table runs" aria-label="Runs">
      <thead>
        <tr>
          <th scope="col">Event</th>
          <th scope="col">Status</th>
          <th scope="col">Actions</th>
          <th scope="col">Started</th>
        </tr>
      </thead>
      <tbody>
        {rows.map((r) => (
          <tr key={r.id} data-status={r.status}>
            <td>{r.event_type}</td>
            <td>
              {r.status}
              {r.skip_reason && <span className="muted"> ({SKIPPED[r.skip_reason] ?? r.skip_reason})</span>}
            </td>
            <td>
              {r.actions.length === 0
                ? '—'
                : r.actions.map((a, i) => (
                    <div key={i}>
                      {ACTIONS[a.type as keyof typeof ACTIONS] ?? a.type}: {a.status}
                      {a.detail && ` (${a.detail})`}
                      {a.status === 'retrying' && a.next_attempt_at && ` · next try ${when(a.next_attempt_at)}`}
                    </div>
                  ))}
            </td>
            <td>{when(r.created_at)}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
